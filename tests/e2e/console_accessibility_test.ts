/**
 * The console's accessibility in a real headless chromium (issue #21: "labels, keyboard
 * navigation, contrast"): on every page and the sign-in page, every control, link, frame and
 * image has an accessible name (chromium's accessibility tree), the Tab key reaches every
 * control with a visible focus indicator, and text meets WCAG AA contrast (4.5:1, 3:1 for large
 * text) under both the light and the dark colour-scheme preference; and a keyboard-only user
 * moves through the navigation, creates a site and deletes it through the confirmation dialog
 * (focus kept inside it, Escape closes it, focus returns to the button that opened it).
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { TOKENS_ON } from "../_helpers/api_access.ts";
import {
  contrast,
  type ContrastReport,
  focused,
  tabWalk,
  unnamed,
} from "../_helpers/accessibility.ts";
import { ADMIN, settle, shopWithAttack, startConsoleKit } from "../_helpers/console.ts";
import { HAS_CHROMIUM, launchBrowser } from "../_helpers/browser.ts";
import { callJson, login, setupToken } from "../_helpers/identity.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { PAGES } from "../../console/pages.js";
import type { Page } from "playwright-core";
import { ignoreWithout } from "../_helpers/services.ts";

/** Adds one page's contrast report to the running totals. */
function tally(total: ContrastReport, page: string, report: ContrastReport): void {
  total.failures.push(...report.failures.map((f) => `${page}: ${f}`));
  for (const [k, v] of Object.entries(report.checked)) {
    total.checked[k as keyof ContrastReport["checked"]] += v;
  }
}

const empty = (): ContrastReport => ({
  failures: [],
  checked: { text: 0, link: 0, button: 0, muted: 0, error: 0, field: 0 },
});

/**
 * Watches the page from now on and, in the moment `condition` (a script expression) first holds
 * after a change to the document, takes the value of `probe`; the returned function waits for
 * it. What a user meets the instant something is drawn (where the focus is, whether a button
 * works), which a check made after a wait for the element can miss when the page finishes the
 * job a frame or a request later.
 */
async function atFirstDraw(page: Page, condition: string, probe: string) {
  const key = `__drawn${crypto.randomUUID().replaceAll("-", "")}`;
  // (`void`: evaluate would wait for the promise itself, before the action that draws it.)
  await page.evaluate(`void (globalThis.${key} = new Promise((resolve) => {
    const seen = new MutationObserver(() => {
      if (!(${condition})) return;
      seen.disconnect();
      resolve(${probe});
    });
    seen.observe(document.body, { childList: true, subtree: true, characterData: true, attributes: true });
  }))`);
  return () => page.evaluate(`globalThis.${key}`);
}

Deno.test({
  name:
    "the console is usable by keyboard, named for screen readers, and readable (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit(TOKENS_ON);
  const { server } = kit;
  const api = await login(server, ADMIN.username, ADMIN.password);
  // Something on the lists: a site, an attack and its block.
  await shopWithAttack(server, api, up.url);
  await callJson(server, "POST", "/api/protection/ip-lists", {
    session: api,
    body: { cidr: "198.51.100.7", action: "block", note: "seen attacking" },
  });

  await t.step("the checks catch what they look for", async () => {
    const p = await kit.signIn(ADMIN);
    await p.open("system");
    await settle(p);
    // A bare input, an empty button, grey-on-white text, a button with its outline removed and
    // an element with a positive tabindex (styles set through the CSSOM: the CSP refuses
    // inline style attributes).
    await p.page.evaluate(`(() => {
      const add = (html) => {
        const t = document.createElement("template");
        t.innerHTML = html;
        const el = t.content.firstChild;
        document.querySelector("main .page").append(el);
        return el;
      };
      add('<input id="bad-input">');
      add('<button id="bad-button"></button>');
      add('<p id="bad-text">faint</p>').style.color = "#aaaaaa";
      add('<button id="bad-ring">no ring</button>').style.outline = "none";
      add('<span id="bad-tab" tabindex="2">jumps the queue</span>');
    })()`);
    const names = (await unnamed(p.page)).join("\n");
    ok(names.includes("bad-input") && names.includes("bad-button"), names);
    const report = await contrast(p.page);
    ok(report.failures.some((f) => f.includes("faint")), report.failures.join("\n"));
    const walk = await tabWalk(p.page);
    ok(walk.noRing.some((r) => r.includes("#bad-ring")), walk.noRing.join("\n"));
    ok(walk.positive.some((x) => x.includes("bad-tab")), walk.positive.join("\n"));
    await p.close();
  });

  for (const scheme of ["light", "dark"] as const) {
    await t.step(
      `every page (${scheme} preference): names, Tab order, focus, contrast`,
      async () => {
        const p = await kit.signIn(ADMIN);
        await p.page.emulateMedia({ colorScheme: scheme });
        const total = empty();
        // The shell repeats on every page: each problem is reported once, on the first page.
        const problems = new Map<string, string>();
        const report = (page: string, problem: string) => {
          if (!problems.has(problem)) problems.set(problem, `${page}: ${problem}`);
        };
        for (const page of PAGES) {
          await p.open(page.id);
          await settle(p);
          tally(total, page.id, await contrast(p.page));
          if (scheme === "dark") continue; // the keyboard and names do not depend on colours
          for (const u of await unnamed(p.page)) report(page.id, `no name: ${u}`);
          const walk = await tabWalk(p.page);
          for (const u of walk.unreached) report(page.id, `Tab never reaches ${u}`);
          for (const r of walk.noRing) report(page.id, `focus not visible: ${r}`);
          for (const x of walk.positive) report(page.id, `positive tabindex: ${x}`);
          ok(walk.reached > PAGES.length, `${page.id}: only ${walk.reached} controls reached`);
        }
        assertEquals([...problems.values(), ...new Set(total.failures)], [], "accessibility");
        console.log(`${scheme}: contrast checked ${JSON.stringify(total.checked)}`);
        for (const [k, v] of Object.entries(total.checked)) {
          if (k !== "error") ok(v > 0, `no ${k} text was checked`);
        }
        ok(p.problems.length === 0, p.problems.join("\n"));
        await p.close();
      },
    );
  }

  await t.step(
    "error messages, notices and the sign-in page are readable in both schemes",
    async () => {
      for (const scheme of ["light", "dark"] as const) {
        const context = await kit.browser.newContext({ colorScheme: scheme });
        const page = await context.newPage();
        await page.goto(`${server.managementUrl}/login`);
        await page.locator("#username").fill("nobody");
        await page.locator("#password").fill("wrong-password-1");
        // The message appears with the button usable again, not a request before it.
        const buttonWithError = await atFirstDraw(
          page,
          `document.getElementById("error").textContent !== ""`,
          `!document.getElementById("submit").disabled`,
        );
        await page.locator("#submit").click();
        await page.locator("#error", { hasText: /./ }).waitFor();
        assertEquals(await buttonWithError(), true, "the button was enabled with the error");
        const login = await contrast(page);
        assertEquals(login.failures, [], `sign-in page, ${scheme}`);
        ok(login.checked.error > 0 && login.checked.button > 0, JSON.stringify(login.checked));
        assertEquals(await unnamed(page), [], "sign-in page names");
        const walk = await tabWalk(page, 10);
        assertEquals([walk.unreached, walk.noRing], [[], []], `sign-in page keyboard, ${scheme}`);
        await context.close();
      }
      const p = await kit.signIn(ADMIN);
      await p.open("sites");
      await p.page.locator("button.new").click();
      await p.page.locator("#edit-name").fill("broken");
      await p.page.locator("#edit-hosts").fill("broken.test");
      await p.page.locator("#edit-upstreams").fill("ftp://nowhere");
      await p.page.locator("form button[type=submit]").click();
      await p.page.locator(".error-box").waitFor();
      for (const scheme of ["light", "dark"] as const) {
        await p.page.emulateMedia({ colorScheme: scheme });
        const r = await contrast(p.page);
        assertEquals(r.failures, [], `error box, ${scheme}`);
        ok(r.checked.error >= 3, JSON.stringify(r.checked)); // message, code, trace id
      }
      await p.close();
    },
  );

  await t.step("a keyboard-only user navigates, creates a site and deletes it", async () => {
    const p = await kit.signIn(ADMIN);
    const { page } = p;
    const active = (selector: string) =>
      page.evaluate(`!!document.activeElement?.matches(${JSON.stringify(selector)})`);
    /** Presses Tab until `selector` has the focus (fails after `max` presses). */
    const tabTo = async (selector: string, max = 80) => {
      for (let i = 0; i < max; i++) {
        if (await active(selector)) return;
        await page.keyboard.press("Tab");
      }
      throw new Error(`Tab never reached ${selector}; focus is on ${await focused(page)}`);
    };

    // The skip link (the first stop at the top of the page) moves on to the page's content,
    // past the navigation.
    await tabTo("a.skip");
    assertEquals(await page.locator("a.skip").isVisible(), true);
    await page.keyboard.press("Enter");
    await page.keyboard.press("Tab");
    ok(await active("main *"), `after the skip link: ${await focused(page)}`);

    // Enter on a navigation link opens the page and puts the focus on its heading.
    await tabTo("#nav-sites");
    const titleDrawn = await atFirstDraw(
      page,
      `document.getElementById("page-title")?.textContent === "Sites"`,
      `document.activeElement?.id === "page-title"`,
    );
    await page.keyboard.press("Enter");
    await page.waitForURL(/\/console\/sites$/);
    await page.locator("#page-title", { hasText: "Sites" }).waitFor();
    ok(await active("#page-title"), `after navigating: ${await focused(page)}`);
    assertEquals(await titleDrawn(), true, "the heading had the focus when it was drawn");

    // Space on "New" opens the form with the focus in its first field; Enter on its button
    // submits it.
    await tabTo("button.new");
    const formDrawn = await atFirstDraw(
      page,
      `document.getElementById("edit-name")`,
      `document.activeElement?.id === "edit-name"`,
    );
    await page.keyboard.press("Space");
    await page.locator("#edit-name").waitFor();
    ok(await active("#edit-name"), `the form opened, focus on ${await focused(page)}`);
    assertEquals(await formDrawn(), true, "the first field had the focus when it was drawn");
    await page.keyboard.type("keys");
    await tabTo("#edit-hosts", 5);
    await page.keyboard.type("keys.test");
    await tabTo("#edit-upstreams", 5);
    await page.keyboard.type(up.url);
    await tabTo(".panel form button[type=submit]", 40);
    await page.keyboard.press("Enter");
    await page.locator("td", { hasText: "keys.test" }).waitFor();
    ok(server.dataPlane.sites.list().some((s) => s.name === "keys"), "the site was created");

    // The delete confirmation: focus moves into the dialog and stays there, Escape closes it
    // and gives the focus back to the button that opened it.
    const row = page.locator("tr", { hasText: "keys.test" });
    const remove = row.locator(".confirm > button.danger");
    await remove.evaluate((b) => b.setAttribute("data-target", "yes"));
    await tabTo("button[data-target]");
    await page.keyboard.press("Enter");
    const dialog = row.locator("dialog[open]");
    await dialog.waitFor();
    for (let i = 0; i < 6; i++) {
      ok(await active("dialog[open] *"), `focus left the dialog: ${await focused(page)}`);
      await page.keyboard.press(i % 2 ? "Shift+Tab" : "Tab");
    }
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    ok(await active("button[data-target]"), `after Escape: ${await focused(page)}`);
    assertEquals(server.dataPlane.sites.list().length, 2, "Escape deleted nothing");
    // Enter again, then Space on the dialog's delete button.
    await page.keyboard.press("Enter");
    await dialog.waitFor();
    await tabTo("dialog[open] button.danger", 4);
    await page.keyboard.press("Space");
    await page.locator("td", { hasText: "keys.test" }).waitFor({ state: "detached" });
    assertEquals(server.dataPlane.sites.list().map((s) => s.name), ["shop"]);
    ok(!(await active("body")), "the focus is not dropped on the page's body after deleting");

    // Space toggles a checkbox.
    await p.open("tokens");
    await page.locator("#scope-read-sites").waitFor();
    await tabTo("#scope-read-sites");
    await page.keyboard.press("Space");
    assertEquals(await page.locator("#scope-read-sites").isChecked(), true);
    ok(p.problems.length === 0, p.problems.join("\n"));
    await p.close();
  });
});

Deno.test({
  name:
    "the setup page is named, reachable by keyboard and readable in both schemes (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using browser = await launchBrowser();
  await using server = await startTestServer();
  const token = await setupToken(server);
  for (const scheme of ["light", "dark"] as const) {
    const context = await browser.newContext({ colorScheme: scheme });
    const page = await context.newPage();
    await page.goto(`${server.managementUrl}/setup#token=${token}`);
    await page.locator("#setup-form").waitFor();
    // A too-short password shows the rules, passed (green) and failed (red).
    await page.locator("#username").fill("admin");
    await page.locator("#password").fill("short");
    await page.locator("#confirm").fill("other");
    await page.locator("#password-rules li").first().waitFor();
    const report = await contrast(page);
    assertEquals(report.failures, [], `setup page, ${scheme}`);
    ok(report.checked.button > 0 && report.checked.field > 0, JSON.stringify(report.checked));
    assertEquals(await unnamed(page), [], `setup page names, ${scheme}`);
    const walk = await tabWalk(page, 10);
    assertEquals([walk.unreached, walk.noRing], [[], []], `setup page keyboard, ${scheme}`);
    await context.close();
  }
});
