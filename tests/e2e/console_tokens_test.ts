/**
 * The API-tokens page in a real headless chromium (issue #36): while `waf.yaml` keeps tokens off
 * the page says so before the form, names the key and the restart, and nothing can be filled in;
 * with tokens on, the scope is the caller's permissions grouped by area, each with a description
 * in the console's language, the read-only and everything presets pick what they say, and no
 * identifier or description breaks inside a word, at 1440 and 390 px.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { TOKENS_ON } from "../_helpers/api_access.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ADMIN, type ConsolePage, settle, startConsoleKit } from "../_helpers/console.ts";
import { callJson, login } from "../_helpers/identity.ts";
import { ignoreWithout } from "../_helpers/services.ts";
import { PERMISSIONS } from "../../mod/identity/permissions.ts";

/**
 * Words of `selector`'s text laid out on more than one line (run in the page: DOM code): an
 * identifier is a run without spaces, a word of prose a run without spaces or hyphens (a line may
 * end after the hyphen of "sign-in", as in print, never inside "sign").
 */
const brokenWords = (selector: string, prose = false) =>
  `(() => {
  const broken = [];
  for (const el of document.querySelectorAll(${JSON.stringify(selector)})) {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.textContent.matchAll(${prose ? "/[^\\s-]+/g" : "/\\S+/g"})) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (lines.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
})()`;

async function atWidths(
  p: ConsolePage,
  name: string,
  check: (width: number) => Promise<void>,
) {
  for (const width of [1440, 390]) {
    await p.page.setViewportSize({ width, height: 900 });
    await p.page.waitForTimeout(100);
    await check(width);
    await p.screenshot(`${name}-${width}`);
  }
}

const checked = (p: ConsolePage) =>
  p.page.evaluate(`[...document.querySelectorAll(".perm-item input:checked")]
    .map((e) => e.id.replace("scope-", "").replace("-", ":"))`) as Promise<string[]>;

Deno.test({
  name:
    "the tokens page says first that tokens are off, with the waf.yaml key and the restart, and nothing can be filled in (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using kit = await startConsoleKit();
  for (
    const [language, title] of [["en-US", "API tokens are turned off"], ["zh-CN", "API 令牌未启用"]]
  ) {
    const p = await kit.signIn(ADMIN, language);
    await p.open("tokens");
    await p.page.locator("#token-form").waitFor();
    // The notice and the form come in the same draw, the notice first.
    const notice = p.page.locator("#tokens-disabled");
    assertEquals(await notice.locator("h2").textContent(), title);
    const text = (await notice.textContent())!;
    ok(text.includes("apisec.management_api.enabled: true"), text);
    ok(language !== "en-US" || /restart waf serve/.test(text), text);
    ok(language !== "zh-CN" || text.includes("重启 waf serve"), text);
    assertEquals(
      await p.page.evaluate(`document.getElementById("tokens-disabled")
        .compareDocumentPosition(document.getElementById("token-form")) & 4`),
      4,
      "the notice comes before the form",
    );
    await atWidths(p, `tokens-off-${language}`, async (width) => {
      const [n, f] = [
        await notice.boundingBox(),
        await p.page.locator("#token-form").boundingBox(),
      ];
      ok(n && f && n.y + n.height <= f.y, "the notice is drawn above the form");
      // On a phone the sidebar stacks above every page until the layout gives it a toggle.
      ok(width < 1000 || n!.y < 900, "the notice is on the first screen");
    });
    // Nothing in the form can be used: every field, box and button is disabled.
    const controls = p.page.locator("#token-form input, #token-form button");
    ok((await controls.count()) > 30);
    for (const control of await controls.all()) {
      assertEquals(await control.isDisabled(), true, await control.evaluate((e) => e.outerHTML));
    }
    ok(p.problems.length === 0, p.problems.join("\n"));
    await p.close();
  }
});

Deno.test({
  name:
    "token permissions are grouped by area, each described, with read-only and everything presets, never broken inside a word (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using kit = await startConsoleKit(TOKENS_ON);
  const { server } = kit;
  const api = await login(server, ADMIN.username, ADMIN.password);
  const p = await kit.signIn(ADMIN);
  await p.open("tokens");
  await settle(p);
  assertEquals(await p.page.locator("#tokens-disabled").count(), 0, "tokens are on");

  assertEquals(await p.page.locator(".perm-group > legend").allTextContents(), [
    "Sites",
    "Rules",
    "Protection",
    "Edge",
    "Logs and monitoring",
    "Users and access",
    "System and operations",
    "Cluster",
    "AI",
  ]);
  const inGroup = (id: string) =>
    p.page.locator(`#perm-group-${id} .perm-item code`).allTextContents();
  assertEquals(await inGroup("users"), ["manage:api_tokens", "read:users", "write:users"]);
  assertEquals(await inGroup("ai"), ["read:ai", "write:ai", "use:ai", "approve:ai"]);
  assertEquals(
    (await p.page.locator(".perm-item code").allTextContents()).sort(),
    [...PERMISSIONS].sort(),
    "every permission the administrator holds, once",
  );
  const sites = p.page.locator("#scope-read-sites");
  const described = await p.page.locator(`#${await sites.getAttribute("aria-describedby")}`)
    .textContent();
  assertEquals(described, "See sites: hosts, upstreams, modes and certificates");
  const descriptions = await p.page.locator(".perm-desc").allTextContents();
  assertEquals(descriptions.length, PERMISSIONS.length);
  ok(
    descriptions.every((d) => d.length > 10 && !(PERMISSIONS as readonly string[]).includes(d)),
    descriptions.join("\n"),
  );

  const reads = PERMISSIONS.filter((x) => x.startsWith("read:"));
  await p.page.locator("#preset-read").click();
  assertEquals((await checked(p)).sort(), [...reads].sort());
  assertEquals(
    await p.page.locator("#scope-count").textContent(),
    `${reads.length} of ${PERMISSIONS.length} selected`,
  );
  await p.page.locator("#preset-all").click();
  assertEquals((await checked(p)).length, PERMISSIONS.length);
  await p.page.locator("#preset-none").click();
  assertEquals(await checked(p), []);
  assertEquals(await p.page.locator("#token-create").isDisabled(), true);
  await p.page.locator("#preset-read").click();
  await p.page.locator("#scope-read-logs").uncheck();
  await p.page.locator("#token-note").fill("dashboard screen");
  await p.page.locator("#token-create").click();
  await p.page.locator("#token-secret").waitFor();
  const tokens = await callJson(server, "GET", "/api/system/api-tokens", { session: api });
  const made = (tokens.body.items as { note: string; permissions: string[] }[])
    .find((x) => x.note === "dashboard screen")!;
  assertEquals(made.permissions.sort(), reads.filter((x) => x !== "read:logs").sort());
  await p.page.getByRole("cell", { name: "dashboard screen", exact: true }).waitFor();

  await atWidths(p, "tokens-on", async () => {
    assertEquals(await p.page.evaluate(brokenWords(".perm-item code, .perm-chips code")), []);
    assertEquals(await p.page.evaluate(brokenWords(".perm-desc", true)), []);
  });
  ok(p.problems.length === 0, p.problems.join("\n"));
  await p.close();

  // The areas and descriptions in the other language, still every identifier whole.
  const zh = await kit.signIn(ADMIN, "zh-CN");
  await zh.open("tokens");
  await settle(zh);
  assertEquals(await zh.page.locator("#perm-group-sites > legend").textContent(), "站点");
  assertEquals(
    await zh.page.locator("#scope-read-sites-desc").textContent(),
    "查看站点：域名、上游、模式和证书",
  );
  assertEquals(await zh.page.locator("#preset-read").textContent(), "只读");
  await atWidths(zh, "tokens-on-zh", async () => {
    assertEquals(await zh.page.evaluate(brokenWords(".perm-item code, .perm-chips code")), []);
  });
  ok(zh.problems.length === 0, zh.problems.join("\n"));
  await zh.close();
});
