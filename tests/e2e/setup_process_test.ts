/** The setup token as the real `waf serve` process handles it: output, exit codes, the log file. */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { spawnWaf } from "../_helpers/process.ts";
import { tempDir } from "../_helpers/temp.ts";

const CONFIG =
  'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n';
const STRONG = "Qm7_r2VxK9-pLc4TzWb8NdHs1JfGy6Ua0EoIi3Xk5Rt";

Deno.test("waf serve with WAF_SETUP_TOKEN prints the setup URL, file and receipt but never the token", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir}/waf.yaml`, CONFIG);
  await using waf = spawnWaf(["serve", "--data-dir", dir], { WAF_SETUP_TOKEN: STRONG });
  const m = await waf.waitFor(
    /setup_url=(http:\/\/[\d.:]+)\/setup setup_file=(\S+) receipt=([0-9a-f]{4}-[0-9a-f]{4})/,
  );
  assertEquals(m[2], `${dir}/runtime/setup.url`);
  assertEquals(
    (await Deno.readTextFile(`${dir}/runtime/setup.url`)).trim(),
    `${m[1]}/setup#token=${STRONG}`,
  );
  const probe = await fetch(`${m[1]}/api/setup/probe`, {
    method: "POST",
    headers: { "x-waf-setup-token": STRONG },
  });
  assertEquals(probe.status, 200);
  await probe.body?.cancel();
  assertEquals(await waf.stop("SIGTERM"), 0);
  ok(!waf.output().includes(STRONG));
  const logFiles = [...Deno.readDirSync(`${dir}/logs`)].map((e) => e.name);
  for (const name of logFiles) ok(!Deno.readTextFileSync(`${dir}/logs/${name}`).includes(STRONG));
});

Deno.test("waf serve with a weak WAF_SETUP_TOKEN exits 2 with a clear message that does not contain it", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir}/waf.yaml`, CONFIG);
  const weak = "weakweakweakweakweakweakweakweak";
  await using waf = spawnWaf(["serve", "--data-dir", dir], { WAF_SETUP_TOKEN: weak });
  assertEquals(await waf.wait(), 2);
  assertMatch(
    waf.output(),
    /WAF_SETUP_TOKEN is not a usable setup token: .*predictable.*not shown/,
  );
  ok(!waf.output().includes(weak));
  ok(!waf.output().includes("waf started"));
});
