import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { spawnWaf } from "../_helpers/process.ts";
import { tempDir } from "../_helpers/temp.ts";

const CONFIG =
  'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n';

Deno.test("waf serve as a process prints both addresses and stops on SIGTERM", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir}/waf.yaml`, CONFIG);
  await using waf = spawnWaf(["serve", "--data-dir", dir]);
  const m = await waf.waitFor(/data_plane=127\.0\.0\.1:(\d+) management=(http:\/\/[\d.:]+)/);
  assertMatch(waf.output(), new RegExp(`data_dir=${dir}`));
  const ready = await fetch(`${m[2]}/health/ready`);
  assertEquals(ready.status, 200);
  await ready.body?.cancel();
  const page = await fetch(`http://127.0.0.1:${m[1]}/`);
  assertEquals(page.status, 404);
  await page.body?.cancel();
  assertEquals(await waf.stop("SIGTERM"), 0);
  assertMatch(waf.output(), /stopped/);
});

// The default config listens on 8080 and 9443; the preload binds port 0 instead and records
// the addresses the process asked for, so this test does not need those ports free.
const PORT_ZERO = new URL("../_helpers/listen_port_zero.ts", import.meta.url).pathname;

Deno.test("waf serve creates a documented default config on first start", async () => {
  await using dir = await tempDir();
  const requested = `${dir}/requested_listen.txt`;
  await using waf = spawnWaf(
    ["serve", "--data-dir", dir, "--log-format", "json"],
    { WAF_TEST_REQUESTED_LISTEN: requested },
    ["--preload", PORT_ZERO],
  );
  await waf.waitFor(/"msg":"waf started"/);
  assertEquals(await waf.stop("SIGINT"), 0);
  assertEquals(
    (await Deno.readTextFile(requested)).trim().split("\n").sort(),
    ["0.0.0.0:8080", "127.0.0.1:9443"],
  );
  const yaml = await Deno.readTextFile(`${dir}/waf.yaml`);
  assertEquals((await Deno.stat(`${dir}/waf.yaml`)).mode! & 0o777, 0o600);
  assertMatch(yaml, /listen: "0\.0\.0\.0:8080"/);
  assertMatch(yaml, /# /);
  for (const line of waf.output().trim().split("\n")) {
    const parsed = JSON.parse(line);
    ok(typeof parsed.time === "string" && typeof parsed.msg === "string", line);
  }
});

const REJECTION_HOOK = new URL("../_helpers/unhandled_rejection_hook.ts", import.meta.url).pathname;

Deno.test("waf serve survives a promise rejection nobody handled: logged, and the data plane still answers", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir}/waf.yaml`, CONFIG);
  await using waf = spawnWaf(["serve", "--data-dir", dir], {}, ["--preload", REJECTION_HOOK]);
  const m = await waf.waitFor(/data_plane=127\.0\.0\.1:(\d+) management=(http:\/\/[\d.:]+)/);
  waf.child.kill("SIGUSR2");
  const logged = await waf.waitFor(/ERROR unhandled promise rejection.*\n/);
  assertMatch(logged[0], /error=Error: rejection nobody handled \(test hook\) /);
  assertMatch(logged[0], /at=at \S*unhandled_rejection_hook\.ts/);
  assertMatch(logged[0], /total=1/);
  const page = await fetch(`http://127.0.0.1:${m[1]}/`);
  assertEquals(page.status, 404);
  await page.body?.cancel();
  const ready = await fetch(`${m[2]}/health/ready`);
  assertEquals(ready.status, 200);
  await ready.body?.cancel();
  assertEquals(await waf.stop("SIGTERM"), 0);
});
