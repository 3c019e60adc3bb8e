/**
 * `waf serve` on addresses that are taken (real sockets: a port is occupied first, then waf is
 * started on it): every listener that cannot open is named with its address, and the data
 * directory is left as it was.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { cli } from "../_helpers/cli.ts";
import { tempDir } from "../_helpers/temp.ts";
import { removeCreated, snapshotDir } from "../../cli/data_dir_snapshot.ts";

function occupy(): Deno.TcpListener & { port: number } {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  return Object.assign(l, { port: (l.addr as Deno.NetAddr).port });
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** Every path under `dir`, relative and sorted. */
async function tree(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(`${dir}`)) {
    out.push(prefix + e.name);
    if (e.isDirectory) out.push(...await tree(`${dir}/${e.name}`, `${prefix}${e.name}/`));
  }
  return out.sort();
}

const allFour = (p: { data: number; https: number; mgmt: number; cluster: number }) =>
  `server:\n  data:\n    listen: "127.0.0.1:${p.data}"\n    https_listen: "127.0.0.1:${p.https}"\n` +
  `  management:\n    listen: "127.0.0.1:${p.mgmt}"\ncluster:\n  listen: "127.0.0.1:${p.cluster}"\n`;

Deno.test("serve names every listener that cannot open, with its address, and writes no data directory", async () => {
  await using dir = await tempDir();
  using data = occupy();
  using https = occupy();
  using mgmt = occupy();
  using cluster = occupy();
  const config = `${dir}/waf.yaml`;
  await Deno.writeTextFile(
    config,
    allFour({ data: data.port, https: https.port, mgmt: mgmt.port, cluster: cluster.port }),
  );
  const r = await cli(["serve", "--config", config, "--data-dir", `${dir}/data`]);
  assertEquals(r.code, 1, r.stderr);
  for (
    const [listener, port] of [
      ["data", data.port],
      ["data HTTPS", https.port],
      ["management", mgmt.port],
      ["cluster", cluster.port],
    ] as const
  ) {
    assertMatch(
      r.stderr,
      new RegExp(
        `Cannot open the ${listener} listener on 127\\.0\\.0\\.1:${port}: another process already listens there`,
      ),
    );
  }
  assertMatch(r.stderr, /waf did not start, and nothing was written to the data directory/);
  ok(!(await exists(`${dir}/data`)), "the data directory must not be created");
  assertEquals(await tree(dir), ["waf.yaml"]);
});

Deno.test("serve on taken ports leaves an existing data directory with exactly what it had", async () => {
  await using dir = await tempDir();
  using mgmt = occupy();
  using cluster = occupy();
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    `server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:${mgmt.port}"\n` +
      `cluster:\n  listen: "127.0.0.1:${cluster.port}"\n`,
  );
  await Deno.mkdir(`${dir}/logs`);
  await Deno.writeTextFile(`${dir}/logs/waf.log`, "an earlier run\n");
  await Deno.writeTextFile(`${dir}/notes.txt`, "mine\n");
  const before = await tree(dir);
  const r = await cli(["serve", "--data-dir", dir]);
  assertEquals(r.code, 1, r.stderr);
  assertMatch(r.stderr, new RegExp(`management listener on 127\\.0\\.0\\.1:${mgmt.port}`));
  assertMatch(r.stderr, new RegExp(`cluster listener on 127\\.0\\.0\\.1:${cluster.port}`));
  ok(!/data listener/.test(r.stderr), "the data listener could open");
  assertEquals(await tree(dir), before);
  assertEquals(await Deno.readTextFile(`${dir}/logs/waf.log`), "an earlier run\n");
});

Deno.test("serve on a taken port creates no part of a nested data directory path", async () => {
  await using dir = await tempDir();
  using mgmt = occupy();
  const config = `${dir}/conf/waf.yaml`;
  await Deno.mkdir(`${dir}/conf`);
  await Deno.writeTextFile(
    config,
    `server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:${mgmt.port}"\n`,
  );
  const r = await cli(["serve", "--config", config, "--data-dir", `${dir}/a/b/data`]);
  assertEquals(r.code, 1, r.stderr);
  assertEquals(await tree(dir), ["conf", "conf/waf.yaml"]);
});

Deno.test("serve without a configuration file, its default management port taken, writes no default configuration", async () => {
  await using dir = await tempDir();
  // The defaults listen on 0.0.0.0:8080 and 127.0.0.1:9443; the port is held here unless
  // something else already holds it, and either way waf cannot open it.
  let held: Deno.Listener | undefined;
  try {
    held = Deno.listen({ hostname: "127.0.0.1", port: 9443 });
  } catch (err) {
    if (!(err instanceof Deno.errors.AddrInUse)) throw err;
  }
  try {
    const r = await cli(["serve", "--config", `${dir}/waf.yaml`, "--data-dir", `${dir}/data`]);
    assertEquals(r.code, 1, r.stderr);
    assertMatch(r.stderr, /Cannot open the management listener on 127\.0\.0\.1:9443/);
  } finally {
    held?.close();
  }
  assertEquals(await tree(dir), []);
});

Deno.test("serve on taken ports answers in Chinese when the command line speaks it", async () => {
  await using dir = await tempDir();
  using data = occupy();
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    `server:\n  data:\n    listen: "127.0.0.1:${data.port}"\n  management:\n    listen: "127.0.0.1:0"\n`,
  );
  const r = await cli(["serve", "--data-dir", dir], { env: { lang: "zh-CN" } });
  assertEquals(r.code, 1, r.stderr);
  assertMatch(r.stderr, new RegExp(`无法在 127\\.0\\.0\\.1:${data.port} 上打开 data 监听`));
  assertMatch(r.stderr, /waf 未启动/);
});

Deno.test("removeCreated() removes a data directory this start created, from its first new parent", async () => {
  await using dir = await tempDir();
  const snapshot = await snapshotDir(`${dir}/a/b/data`);
  await Deno.mkdir(`${dir}/a/b/data/logs`, { recursive: true });
  await Deno.writeTextFile(`${dir}/a/b/data/waf.db`, "");
  await removeCreated(snapshot);
  assertEquals(await tree(dir), []);
});

Deno.test("removeCreated() keeps what an existing data directory had, and its store's journal files", async () => {
  await using dir = await tempDir();
  await Deno.mkdir(`${dir}/logs`);
  await Deno.writeTextFile(`${dir}/logs/waf.log`, "old\n");
  await Deno.writeTextFile(`${dir}/waf.db`, "store");
  const snapshot = await snapshotDir(`${dir}`);
  await Deno.writeTextFile(`${dir}/logs/waf.log`, "old\nnew\n");
  await Deno.writeTextFile(`${dir}/waf.db-wal`, "not yet checkpointed");
  await Deno.mkdir(`${dir}/runtime`);
  await Deno.writeTextFile(`${dir}/runtime/setup.url`, "http://...");
  await Deno.mkdir(`${dir}/tls`);
  await removeCreated(snapshot);
  assertEquals(await tree(dir), ["logs", "logs/waf.log", "waf.db", "waf.db-wal"]);
  assertEquals(await Deno.readTextFile(`${dir}/waf.db`), "store");
});
