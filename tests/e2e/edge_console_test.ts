/**
 * The edge page's cache purge against a real server with two data-plane workers, in a real
 * chromium: a purge that every worker answered says "Cache purged.", and one a busy worker did
 * not answer within its second (the API's `complete: false`, `unanswered_workers`) says the purge
 * is not confirmed, in English and in Chinese, instead of claiming success.
 */
import { assertEquals } from "../_helpers/assert.ts";
import { ADMIN, type ConsolePage, startConsoleKit } from "../_helpers/console.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { addSite } from "../_helpers/protection.ts";
import { waitFor } from "../_helpers/wait.ts";
import { workerHooks } from "../_helpers/data_workers.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const WORKERS = { server: { data: { workers: 2 } } };

/**
 * Presses the purge button and waits for the page's answer saying `expected` (each call here
 * expects another text than the answer before it, which stays shown until the new one draws).
 */
async function purge(p: ConsolePage, label: string, expected: string): Promise<string | null> {
  await p.page.locator("button", { hasText: label }).click();
  const status = p.page.locator("#cache-purge-status", { hasText: expected });
  await status.waitFor();
  assertEquals(await status.textContent(), expected);
  return await status.getAttribute("class");
}

const PARTIAL_EN = "Purge not confirmed: 1 data-plane worker(s) did not answer within 1 s. " +
  "They purge when they read the request, but their entries are not counted; " +
  "purge again to confirm.";
const PARTIAL_ZH =
  "清空未确认：1 个数据面工作线程未在 1 秒内应答。它们读到请求时仍会清空，但其条目未计入；请再次清空以确认。";

Deno.test({
  name: "the console says when a cache purge was not answered by every worker (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async () => {
  await using up = startUpstream();
  await using kit = await startConsoleKit(WORKERS);
  const { server } = kit;
  addSite(server, up.url);
  const pool = server.dataWorkers!;
  const hooks = workerHooks(pool);
  await waitFor(() => pool.current(), "both workers ready", 10_000);

  const admin = await kit.signIn(ADMIN);
  await admin.open("edge");
  assertEquals(await purge(admin, "Purge the cache", "Cache purged."), "done");
  // Worker 1 is busy for 3 s: the API waits its 1 s, then answers `complete: false`.
  hooks.stall(1, 3000);
  assertEquals(await purge(admin, "Purge the cache", PARTIAL_EN), "notice warn-note");
  await admin.screenshot("edge-purge-partial-en");
  // Past its 3 s: every worker answers a question again.
  await waitFor(
    async () => (await pool.edgeCache.purgeAll(null, null)).unanswered === 0,
    "worker 1 answering again",
  );
  assertEquals(await purge(admin, "Purge the cache", "Cache purged."), "done");

  const zh = await kit.signIn(ADMIN, "zh-CN");
  await zh.open("edge");
  hooks.stall(2, 3000);
  assertEquals(await purge(zh, "清空缓存", PARTIAL_ZH), "notice warn-note");
  await zh.screenshot("edge-purge-partial-zh");
  assertEquals([...admin.problems, ...zh.problems], []);
});
