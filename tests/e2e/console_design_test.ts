/**
 * The console's design system in a real headless chromium (issue #36): the theme follows the
 * system and the header's picker, is remembered and is applied before the console's script runs
 * (no light flash); status badges and text keep WCAG AA contrast (4.5:1) in both themes, measured
 * from the rendered colours (and every text of each main page passes the accessibility sweep); the sidebar collapses to a rail and stays so; the attack log with
 * 10,000 records stays readable (pages of rows, a header that stays in view, long request lines
 * cut with the whole value on hover); and the main pages, shot at 1440 and 390 px in both themes
 * and both languages into tests/artifacts/screenshots/ (git-ignored), never overflow sideways.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { contrast, contrastByGroup } from "../_helpers/accessibility.ts";
import { TOKENS_ON } from "../_helpers/api_access.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ADMIN, type ConsolePage, settle, startConsoleKit } from "../_helpers/console.ts";
import { addSite, hit } from "../_helpers/protection.ts";
import { record } from "../_helpers/records.ts";
import { ignoreWithout } from "../_helpers/services.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const SHOTS = new URL("../artifacts/screenshots/", import.meta.url).pathname;
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1440, height: 900 };
const LIGHT_SURFACE = "rgb(255, 255, 255)";
const DARK_SURFACE = "rgb(17, 20, 24)";
const SEEDED = 10_000;
/** Long, but short enough to be stored whole (the log cuts queries of over 1024 bytes). */
const LONG_QUERY = "q=" + "a%20long%20search%20".repeat(45);

/** The body's computed background (page code: string scripts, the CSP refuses eval). */
const BACKGROUND = `getComputedStyle(document.body).backgroundColor`;

/** True when the document is wider than the window (something overflows sideways). */
const OVERFLOW = `(() => {
  const wide = document.documentElement.scrollWidth > innerWidth + 1;
  if (!wide) return null;
  const culprits = [...document.querySelectorAll("body *")]
    .filter((e) => e.getBoundingClientRect().right > innerWidth + 1)
    .filter((e) => !e.closest(".table-wrap") || e.matches(".table-wrap"))
    .slice(0, 5).map((e) => e.tagName + "." + e.className + "#" + e.id);
  return { width: document.documentElement.scrollWidth, culprits };
})()`;

/** What the contrast check measures: the status badges by kind, and the page's text. */
const MEASURED = {
  "badge block (bad)": "main .badge.bad",
  "badge challenge (warn)": "main .badge.warn",
  "badge log (info)": "main .badge.info",
  "badge pass (good)": "main .badge.good",
  "body text": "main td, main dd, main p:not(.muted):not(.hint)",
  "muted text": "main .muted, main .page-desc, main .hint, nav .nav-title",
  links: "main a, nav a",
  "table header": "main th",
  buttons: "button:not(:disabled)",
  "top bar": ".top .brand, .top #whoami",
};

/**
 * The page header: whether it has a one-line description, and the primary action's text when its
 * actions sit at the header's right edge (null without actions).
 */
const HEADER = `(() => {
  const head = document.querySelector("main .page-head");
  const actions = head.querySelector(".actions");
  const right = (e) => e.getBoundingClientRect().right;
  return {
    description: (document.querySelector("#page-desc")?.textContent ?? "").trim() !== "",
    primary: actions && Math.abs(right(actions) - right(head)) < 2
      ? actions.querySelector("button:last-of-type")?.textContent.trim() ?? null
      : null,
  };
})()`;

/** Waits until `script` is true in the page (polled: the CSP refuses waitForFunction's eval). */
async function until(page: ConsolePage["page"], script: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await page.evaluate(script)) return;
    await page.waitForTimeout(50);
  }
  throw new Error(`never true: ${script}`);
}

async function setTheme(p: ConsolePage, theme: "light" | "dark" | "system"): Promise<void> {
  await p.page.locator("#theme").selectOption(theme);
  await until(p.page, `document.documentElement.dataset.themeChoice === "${theme}"`);
}

/** Seeds `SEEDED` attack-log records: every kind of action, some with a very long query. */
async function seed(server: Awaited<ReturnType<typeof startConsoleKit>>["server"]) {
  const actions = ["block", "challenge", "log", "pass"] as const;
  const log = server.dataPlane.accessLog;
  const start = Date.now() - SEEDED * 1000;
  for (let batch = 0; batch < SEEDED; batch += 1000) {
    for (let i = batch; i < batch + 1000; i++) {
      const action = actions[i % actions.length]!;
      log.push(record({
        time: start + i * 1000,
        action,
        status: action === "block" ? 403 : action === "challenge" ? 403 : 200,
        path: `/catalogue/item/${i}`,
        query: i % 3 === 0 ? LONG_QUERY : `id=${i}`,
        client_ip: `198.51.100.${i % 250}`,
        chain: [{ check: "engine", result: action === "pass" ? "pass" : "match", us: 3 }],
      }));
    }
    await log.flush();
  }
}

Deno.test({
  name: "the console's design system holds in both themes, widths and languages (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using kit = await startConsoleKit(TOKENS_ON);
  const { server } = kit;
  addSite(server, up.url);
  await seed(server);
  const attack = await hit(server, "/search?q=1%20union%20select%20password%20from%20users", {
    ip: "203.0.113.9",
  });
  assertEquals(attack.status, 403);
  await Deno.mkdir(SHOTS, { recursive: true });
  console.log(`design screenshots: ${SHOTS}`);

  await t.step("the theme follows the system, is applied before the console's script", async () => {
    const context = await kit.browser.newContext({ colorScheme: "dark", viewport: DESKTOP });
    const page = await context.newPage();
    // The console's own script held back: what shows meanwhile is what the first paint shows.
    let release = () => {};
    const held = new Promise<void>((r) => release = r);
    await page.route("**/console/assets/app.js", async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(`${server.managementUrl}/login`);
    await page.waitForLoadState("domcontentloaded");
    assertEquals(await page.evaluate(BACKGROUND), DARK_SURFACE, "sign-in page, dark system");
    await page.goto(`${server.managementUrl}/console`, { waitUntil: "commit" });
    await until(page, `document.readyState !== "loading"`);
    assertEquals(await page.evaluate(`document.documentElement.dataset.theme`), "dark");
    assertEquals(await page.evaluate(BACKGROUND), DARK_SURFACE, "the shell before app.js ran");
    release();
    await context.close();
  });

  const admin = await kit.signIn(ADMIN);
  await admin.page.setViewportSize(DESKTOP);

  await t.step("the header's picker changes the theme and the browser remembers it", async () => {
    await admin.page.emulateMedia({ colorScheme: "light" });
    await admin.open("dashboard");
    assertEquals(await admin.page.evaluate(BACKGROUND), LIGHT_SURFACE, "system: light");
    await setTheme(admin, "dark");
    assertEquals(await admin.page.evaluate(BACKGROUND), DARK_SURFACE, "chosen: dark");
    await admin.page.reload();
    await admin.page.locator("#page-title").waitFor();
    assertEquals(await admin.page.evaluate(BACKGROUND), DARK_SURFACE, "remembered");
    assertEquals(await admin.page.locator("#theme").inputValue(), "dark");
    // "System" follows the system again, and keeps following it.
    await setTheme(admin, "system");
    assertEquals(await admin.page.evaluate(BACKGROUND), LIGHT_SURFACE);
    await admin.page.emulateMedia({ colorScheme: "dark" });
    await until(admin.page, `document.documentElement.dataset.theme === "dark"`);
    assertEquals(await admin.page.evaluate(BACKGROUND), DARK_SURFACE, "system turned dark");
    await admin.page.emulateMedia({ colorScheme: "light" });
  });

  await t.step("status badges and text keep 4.5:1 contrast in both themes", async () => {
    await admin.open("logs?action=all");
    await admin.page.locator("main tbody .badge.info").first().waitFor();
    await admin.page.locator("main tbody .badge.good").first().waitFor();
    for (const theme of ["light", "dark"] as const) {
      await setTheme(admin, theme);
      const measured = await contrastByGroup(admin.page, MEASURED);
      console.log(`contrast, ${theme} theme: ${JSON.stringify(measured)}`);
      assertEquals(Object.keys(measured).sort(), Object.keys(MEASURED).sort(), "all measured");
      for (const [group, m] of Object.entries(measured)) {
        ok(m.ratio >= 4.5, `${theme}: ${group} "${m.text}" is ${m.ratio}:1`);
      }
      // And every other piece of text on the page (the accessibility sweep's rule).
      assertEquals((await contrast(admin.page)).failures, [], theme);
    }
    await setTheme(admin, "light");
  });

  await t.step("the sidebar collapses to a rail, and stays collapsed", async () => {
    await admin.open("dashboard");
    const nav = admin.page.locator("nav#nav");
    const wide = (await nav.boundingBox())!.width;
    const mainWide = (await admin.page.locator("main").boundingBox())!.width;
    const button = admin.page.locator("#nav-collapse");
    assertEquals(await button.getAttribute("aria-expanded"), "true");
    await button.click();
    assertEquals(await button.getAttribute("aria-expanded"), "false");
    const rail = (await nav.boundingBox())!.width;
    ok(rail < 60 && rail < wide, `rail ${rail} px (was ${wide})`);
    assertEquals(await admin.page.locator("#nav-logs").isVisible(), false);
    ok((await admin.page.locator("main").boundingBox())!.width > mainWide, "the content widens");
    await admin.page.reload();
    await admin.page.locator("#page-title").waitFor();
    assertEquals((await nav.boundingBox())!.width, rail, "remembered");
    // On a phone the menu shows the whole navigation even so.
    await admin.page.setViewportSize(PHONE);
    await admin.page.locator("#menu-toggle").click();
    await admin.page.locator("#nav-logs").waitFor({ state: "visible" });
    await admin.page.keyboard.press("Escape");
    await admin.page.setViewportSize(DESKTOP);
    await admin.page.screenshot({ path: `${SHOTS}sidebar-collapsed-1440.png` });
    await button.click();
    await admin.page.locator("#nav-logs").waitFor({ state: "visible" });
    assertEquals((await nav.boundingBox())!.width, wide);
  });

  await t.step("the attack log over 10,000 records stays readable", async () => {
    const requests: string[] = [];
    admin.page.on("request", (r) => {
      if (new URL(r.url()).pathname === "/api/logs") requests.push(r.url());
    });
    await admin.open("logs");
    await settle(admin);
    const rows = admin.page.locator("main tbody tr");
    assertEquals(await rows.count(), 50, "one page of rows");
    assertEquals(requests.length, 1);
    await admin.page.locator("#more").click();
    await until(admin.page, `document.querySelectorAll("main tbody tr").length === 100`);
    // Scrolled far down the table, its header stays at the top of the table's box.
    const wrap = admin.page.locator("main .table-wrap");
    await admin.page.evaluate(`(() => {
      const wrap = document.querySelector("main .table-wrap");
      wrap.scrollTop = wrap.scrollHeight;
    })()`);
    const header = (await admin.page.locator("main thead th").first().boundingBox())!;
    const box = (await wrap.boundingBox())!;
    ok(Math.abs(header.y - box.y) <= 2, `header at ${header.y}, table at ${box.y}`);
    ok(box.y + box.height <= DESKTOP.height + 1, "the table's box fits the window");
    // A long request line is cut in its column, whole on hover.
    const cut = await admin.page.evaluate(`(() => {
      const el = [...document.querySelectorAll("main td.request-line .clip")]
        .find((e) => e.textContent.includes("a%20long"));
      return { cut: el.scrollWidth > el.clientWidth, width: el.getBoundingClientRect().width,
        title: el.getAttribute("title") ?? "" };
    })()`) as { cut: boolean; width: number; title: string };
    ok(cut.cut && cut.width <= 36 * 14 + 1, JSON.stringify({ ...cut, title: "" }));
    ok(cut.title.endsWith(LONG_QUERY), "the whole request line in the tooltip");
    for (const size of [DESKTOP, PHONE]) {
      await admin.page.setViewportSize(size);
      assertEquals(await admin.page.evaluate(OVERFLOW), null, `${size.width} px`);
    }
    await admin.page.setViewportSize(DESKTOP);
  });

  await t.step("the main pages at 1440 and 390 px, both themes, both languages", async () => {
    // Each page, and the primary action its header carries on the right (English).
    const pages = [
      ["dashboard", "dashboard", null],
      ["sites", "sites", "New site"],
      ["logs", "logs", null],
      ["logs-detail", `logs/${attack.traceId}`, null],
      ["first-site", "sites/first", null],
      ["tokens", "tokens", "New token"],
      ["settings", "system", null],
      ["account", "account", null],
    ] as const;
    const zh = await kit.signIn(ADMIN, "zh-CN");
    for (const [language, p] of [["en", admin], ["zh-CN", zh]] as const) {
      await Deno.mkdir(`${SHOTS}${language}`, { recursive: true });
      for (const [name, path, primary] of pages) {
        await p.page.setViewportSize(DESKTOP);
        await p.open(path);
        await settle(p);
        const head = await p.page.evaluate(HEADER) as { description: boolean; primary: string };
        // A record is a detail view: its header is the list's, without the description.
        assertEquals(head.description, name !== "logs-detail", `${language} ${name}: description`);
        if (language === "en") assertEquals(head.primary, primary, `${name}: primary action`);
        for (const theme of ["light", "dark"] as const) {
          await setTheme(p, theme);
          for (const size of [DESKTOP, PHONE]) {
            await p.page.setViewportSize(size);
            await p.page.evaluate(`new Promise((r) => requestAnimationFrame(() => r()))`);
            if (size === DESKTOP) {
              const { failures } = await contrast(p.page);
              assertEquals(failures, [], `${language} ${name} ${theme}: contrast`);
            }
            if (size === PHONE) {
              assertEquals(
                await p.page.evaluate(OVERFLOW),
                null,
                `${language} ${name} ${theme}: overflows at 390 px`,
              );
            }
            const file = `${SHOTS}${language}/${name}-${size.width}-${theme}.png`;
            await p.page.screenshot({ path: file, fullPage: true });
          }
        }
      }
      assertMatch(await p.page.locator("html").getAttribute("lang") ?? "", /^(en|zh-CN)$/);
      ok(p.problems.length === 0, p.problems.join("\n"));
    }
    await zh.close();
  });
});
