/**
 * The cluster as real `waf serve` processes on loopback, each with its own data directory and
 * ports (port 0): what an operator runs on three machines.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { spawnWaf } from "../_helpers/process.ts";
import { tempDir } from "../_helpers/temp.ts";

const LISTEN =
  'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n';

Deno.test("waf serve as a node with neither a stored identity nor a join token exits 2 naming cluster.join_token", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    `${LISTEN}cluster:\n  role: node\n  controller_url: "https://127.0.0.1:9"\n`,
  );
  await using waf = spawnWaf(["serve", "--data-dir", dir]);
  assertEquals(await waf.wait(), 2);
  assertMatch(
    waf.output(),
    /Invalid configuration in ".*waf\.yaml":\n\s+cluster\.join_token: expected a one-time join token/,
  );
  ok(!waf.output().includes("waf started"));
});
