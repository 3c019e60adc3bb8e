/**
 * The setup and sign-in pages in the reader's language, in a real headless chromium: a browser
 * asking for Simplified Chinese gets both pages in Chinese (static texts, the rules that react
 * to typing, the host figures, the sign-in's refusal, the page title and `lang`); the page's own
 * picker switches to English at once and is remembered; and the language chosen in the console
 * is the one the sign-in page speaks after signing out, whatever the browser asks for.
 */
import { assertEquals, assertMatch } from "../_helpers/assert.ts";
import { HAS_CHROMIUM, launchBrowser, type Page } from "../_helpers/browser.ts";
import { ADMIN, completeSetup } from "../_helpers/identity.ts";
import { startTestServer } from "../_helpers/server.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const text = async (page: Page, selector: string) =>
  ((await page.locator(selector).first().textContent()) ?? "").replace(/\s+/g, " ").trim();

Deno.test({
  name:
    "a zh-CN browser gets setup and sign-in in Chinese, and the page's picker switches (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using browser = await launchBrowser();
  await using server = await startTestServer();
  const link = (await Deno.readTextFile(`${server.dir}/runtime/setup.url`)).trim();
  const context = await browser.newContext({ locale: "zh-CN" });
  const page = await context.newPage();

  // Without the token, the page says where the link is, with its file names kept as code.
  await page.goto(`${server.managementUrl}/setup`);
  await page.locator("#where").waitFor({ state: "visible" });
  assertEquals(await text(page, "#status"), "此页面需要带有秘密令牌的设置链接。");
  assertMatch(
    await text(page, "#where p"),
    /^完整链接保存在 waf 数据目录中的文件 runtime\/setup\.url 里/,
  );
  assertEquals(await page.locator("#where p code").count(), 5);
  assertEquals(await text(page, "label[for=link]"), "或粘贴设置链接");

  await page.goto(link);
  await page.locator("#setup-form").waitFor({ state: "visible" });
  assertEquals(await page.locator("html").getAttribute("lang"), "zh-CN");
  assertEquals(await page.title(), "waf 初始设置");
  assertEquals(await text(page, "h1"), "设置 waf");
  assertEquals(await text(page, "#status"), "创建第一个管理员账户。");
  assertEquals(await text(page, "label[for=username]"), "管理员用户名");
  assertEquals(await text(page, "label[for=confirm]"), "再次输入密码");
  assertMatch(
    await text(page, "#probe"),
    /^主机：\d+ 个 CPU 核心，[\d.]+ GiB 内存，数据目录可写。/,
  );
  assertEquals(
    await text(page, "#receipt-value").then((r) => /^[0-9a-f]{4}-[0-9a-f]{4}$/.test(r)),
    true,
  );
  assertEquals(await text(page, "#profile option[value=strict]"), "strict：中等置信度的发现也拦截");
  assertEquals(await text(page, "#setup-form button[type=submit]"), "创建管理员");
  // The rules as the user types, in Chinese and marked as they are met.
  await page.locator("#username").fill("1admin");
  assertEquals(await text(page, "#username-rules li.bad"), "以 ASCII 字母开头");
  await page.locator("#username").fill(ADMIN.username);
  assertEquals(await text(page, "#password-rules li:first-child"), "至少 10 个字符");
  await page.locator("#password").fill(ADMIN.password);
  await page.locator("#confirm").fill("Something-else-1");
  await page.locator("#submit").click();
  assertEquals(await text(page, "#error"), "两次输入的密码不一致。");
  await page.locator("#confirm").fill(ADMIN.password);
  await page.locator("#submit").click();

  await page.waitForURL(`${server.managementUrl}/login`);
  // The page translates itself once its module has run.
  await page.locator("h1").filter({ hasText: "登录 waf" }).waitFor();
  assertEquals(await page.title(), "登录 waf");
  assertEquals(await text(page, "#created"), "管理员账户已创建：请用刚才设置的用户名和密码登录。");
  assertEquals(await text(page, "label[for=password]"), "密码");
  assertEquals(await text(page, "#submit"), "登录");
  await page.locator("#password").fill("Wrong-Horse-9x");
  await page.locator("#submit").click();
  await page.locator("#error").filter({ hasText: "用户名或密码错误" }).waitFor();

  // The page's own picker: English at once, the refusal rewritten, and kept after a reload.
  assertEquals(await page.locator("#language").inputValue(), "zh-CN");
  await page.locator("#language").selectOption("en");
  assertEquals(await text(page, "h1"), "Sign in to waf");
  assertEquals(await text(page, "#error"), "Invalid username or password");
  assertEquals(await page.locator("html").getAttribute("lang"), "en");
  await page.reload();
  await page.locator("#language option").first().waitFor({ state: "attached" }); // translated
  assertEquals(await text(page, "h1"), "Sign in to waf");
  assertEquals(await text(page, "label[for=username]"), "Username");
  await context.close();
});

Deno.test({
  name:
    "the language chosen in the console is the sign-in page's after signing out (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using browser = await launchBrowser();
  await using server = await startTestServer();
  await completeSetup(server);
  const context = await browser.newContext({ locale: "en-US" });
  const page = await context.newPage();
  await page.goto(`${server.managementUrl}/login`);
  await page.locator("#language option").first().waitFor({ state: "attached" }); // translated
  assertEquals(await text(page, "h1"), "Sign in to waf");
  await page.locator("#username").fill(ADMIN.username);
  await page.locator("#password").fill(ADMIN.password);
  await page.locator("#submit").click();
  await page.waitForURL(/\/console/);
  await page.locator("#language").selectOption("zh-CN");
  await page.locator("#logout").filter({ hasText: "退出" }).waitFor();
  await page.locator("#logout").click();
  await page.waitForURL(/\/login/);
  await page.locator("h1").filter({ hasText: "登录 waf" }).waitFor();
  assertEquals(await text(page, "label[for=username]"), "用户名");
  await context.close();
});
