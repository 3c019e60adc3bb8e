import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { cli } from "../_helpers/cli.ts";
import { tempDir } from "../_helpers/temp.ts";
import { VERSION } from "../../mod/core/version.ts";

Deno.test("waf --help lists the commands and global options", async () => {
  const r = await cli(["--help"]);
  assertEquals(r.code, 0);
  assertMatch(r.stdout, /serve/);
  assertMatch(r.stdout, /config check/);
  assertMatch(r.stdout, /--data-dir DIR/);
});

Deno.test("waf --version prints the version, the build kind and its content (source here)", async () => {
  const r = await cli(["--version"]);
  assertEquals(r.code, 0);
  assertEquals(
    r.stdout,
    `waf ${VERSION}\nbuild: source\ncontent: source\nruntime: deno ${Deno.version.deno} (${Deno.build.target})\n`,
  );
  assertEquals((await cli(["--help"])).stdout.includes("self-contained"), false);
});

Deno.test("waf help <command> and <command> --help print the command's usage", async () => {
  const a = await cli(["help", "config", "check"]);
  const b = await cli(["config", "check", "--help"]);
  assertEquals(a.code, 0);
  assertEquals(a.stdout, b.stdout);
  assertMatch(a.stdout, /^waf config check/);
});

Deno.test("an unknown command is a usage error with exit code 2", async () => {
  const r = await cli(["frobnicate"]);
  assertEquals(r.code, 2);
  assertMatch(r.stderr, /Unknown command: "frobnicate"/);
  assertEquals((await cli(["help", "nope"])).code, 2);
  assertEquals((await cli([])).code, 2);
});

Deno.test("an unknown flag is a usage error with exit code 2", async () => {
  const r = await cli(["--frob"]);
  assertEquals(r.code, 2);
  assertMatch(r.stderr, /Unknown option: "--frob"/);
  const s = await cli(["serve", "--frob"]);
  assertEquals(s.code, 2);
  assertMatch(s.stderr, /--frob/);
});

Deno.test("a global option without a value is a usage error", async () => {
  assertEquals((await cli(["serve", "--config"])).code, 2);
  assertEquals((await cli(["--log-format", "xml", "serve"])).code, 2);
});

Deno.test("waf config check accepts global options before or after the command words", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir}/waf.yaml`, "logging:\n  level: debug\n");
  const before = await cli(["--data-dir", dir, "config", "check"]);
  const after = await cli(["config", "check", `--config=${dir}/waf.yaml`]);
  assertEquals(before.code, 0);
  assertEquals(after.code, 0);
  assertMatch(before.stdout, /is valid/);
});

Deno.test("waf config check prints each problem with its key path and exits 2", async () => {
  await using dir = await tempDir();
  const path = `${dir}/waf.yaml`;
  await Deno.writeTextFile(
    path,
    'server:\n  data:\n    listen: "nope"\n  extra: 1\nprotection:\n  bot:\n    challenge_backend: redis\n',
  );
  const r = await cli(["config", "check", "--config", path]);
  assertEquals(r.code, 2);
  assertMatch(r.stderr, /server\.data\.listen: expected "host:port"/);
  assertMatch(r.stderr, /server\.extra: unknown key/);
  assertMatch(r.stderr, /protection\.bot\.challenge_backend/);
});

Deno.test("waf config check refuses what waf serve refuses, with the same messages", async () => {
  await using dir = await tempDir();
  const cases: Array<[string, RegExp]> = [
    [
      'server:\n  data:\n    listen: "127.0.0.1:9443"\n',
      /server\.management\.listen: .*"127\.0\.0\.1:9443" is also the address of server\.data\.listen/,
    ],
    [
      'server:\n  data:\n    listen: "0.0.0.0:7000"\n    https_listen: "127.0.0.1:7000"\n',
      /server\.data\.https_listen: .*also the address of server\.data\.listen/,
    ],
    ["update:\n  ota:\n    enabled: true\n", /update\.ota\.enabled: expected false/],
  ];
  for (const [yaml, problem] of cases) {
    const config = `${dir}/waf.yaml`;
    await Deno.writeTextFile(config, yaml);
    const check = await cli(["config", "check", "--config", config]);
    assertEquals(check.code, 2, yaml);
    assertMatch(check.stderr, problem);
    const serve = await cli(["serve", "--config", config, "--data-dir", `${dir}/data`]);
    assertEquals(serve.code, 2, yaml);
    assertMatch(serve.stderr, problem);
    let created = true;
    await Deno.stat(`${dir}/data`).catch(() => created = false);
    ok(!created, `serve wrote nothing for ${yaml}`);
  }
  // Port 0 twice is two free ports, not a clash.
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n',
  );
  assertEquals((await cli(["config", "check", "--config", `${dir}/waf.yaml`])).code, 0);
});

Deno.test("a cluster node with neither a stored identity nor a join token: config check and serve name cluster.join_token", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    'cluster:\n  role: node\n  controller_url: "https://127.0.0.1:9444"\n',
  );
  const problem = /cluster\.join_token: expected a one-time join token/;
  const check = await cli(["config", "check", "--data-dir", dir]);
  assertEquals(check.code, 2);
  assertMatch(check.stderr, problem);
  const serve = await cli(["serve", "--data-dir", dir]);
  assertEquals(serve.code, 2);
  assertMatch(serve.stderr, problem);
  ok(![...Deno.readDirSync(dir)].some((e) => e.name === "waf.db"), "serve wrote no store");
  // With the token in the environment, the same file is valid.
  const env = { clusterJoinToken: "wafjoin.x.y.z" };
  assertEquals((await cli(["config", "check", "--data-dir", dir], { env })).code, 0);
});

Deno.test("waf config check on a missing file exits 2", async () => {
  await using dir = await tempDir();
  const r = await cli(["config", "check", "--config", `${dir}/absent.yaml`]);
  assertEquals(r.code, 2);
  assertMatch(r.stderr, /not found/);
});

Deno.test("serve with an invalid config stops with exit code 2 naming the key", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir}/waf.yaml`, "storage:\n  redis:\n    url: nope\n");
  const r = await cli(["serve", "--data-dir", dir]);
  assertEquals(r.code, 2);
  assertMatch(r.stderr, /storage\.redis\.url/);
});

/** Runs `waf config check` and `waf serve` on `yaml`; both must refuse with exit 1, writing nothing. */
async function refusedInProduction(yaml: string): Promise<{ check: string; serve: string }> {
  await using dir = await tempDir();
  const config = `${dir}/waf.yaml`;
  await Deno.writeTextFile(config, yaml);
  const data = `${dir}/data`;
  const check = await cli(["config", "check", "--config", config, "--data-dir", data]);
  assertEquals(check.code, 1, check.stderr);
  const serve = await cli(["serve", "--config", config, "--data-dir", data]);
  assertEquals(serve.code, 1, serve.stderr);
  for (const out of [check.stderr, serve.stderr]) {
    assertMatch(out, /^ErrProductionStorageUnavailable: storage\.profile is "production"/);
    assertMatch(out, /no listener opened, no file written/);
  }
  assertEquals(
    [...Deno.readDirSync(dir)].map((e) => e.name),
    ["waf.yaml"],
    "not even the data dir",
  );
  return { check: check.stderr, serve: serve.stderr };
}

Deno.test("config check and serve refuse the production profile without its database and key file, naming both keys", async () => {
  const none = await refusedInProduction("storage:\n  profile: production\n");
  for (const out of [none.check, none.serve]) {
    assertMatch(
      out,
      /storage\.production\.postgresql\.dsn: expected the production management database/,
    );
    assertMatch(
      out,
      /storage\.production\.secrets_file: expected the path of the deployment key file/,
    );
  }
  const noKeyFile = await refusedInProduction(
    'storage:\n  profile: production\n  production:\n    postgresql:\n      dsn: "postgres://waf@127.0.0.1:1/waf"\n',
  );
  for (const out of [noKeyFile.check, noKeyFile.serve]) {
    assertMatch(out, /storage\.production\.secrets_file: /);
    ok(!out.includes("storage.production.postgresql.dsn"), out);
  }
  assertEquals(none.check, none.serve, "config check says what serve says");
});

Deno.test("config check and serve refuse an unreachable production database, naming it with the password masked", async () => {
  // A port nothing listens on: one the system gave this test, closed again.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const { check, serve } = await refusedInProduction(
    `storage:\n  profile: production\n  production:\n    postgresql:\n      dsn: "postgres://waf:hunter2-pw@127.0.0.1:${port}/waf"\n      connect_timeout: 2s\n    secrets_file: /nonexistent/deployment.key\n`,
  );
  for (const out of [check, serve]) {
    assertMatch(
      out,
      new RegExp(
        `storage\\.production\\.postgresql\\.dsn: the production management database "postgres://waf:\\*\\*\\*@127\\.0\\.0\\.1:${port}/waf" is unreachable`,
      ),
    );
    ok(!out.includes("hunter2"), "the password never reaches the output");
  }
  assertEquals(check, serve);
});

Deno.test("a port clash names the listener and its address", async () => {
  await using dir = await tempDir();
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (taken.addr as Deno.NetAddr).port;
  for (
    const [listener, yaml] of [
      [
        "data",
        `server:\n  data:\n    listen: "127.0.0.1:${port}"\n  management:\n    listen: "127.0.0.1:0"\n`,
      ],
      [
        "management",
        `server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:${port}"\n`,
      ],
    ]
  ) {
    await Deno.writeTextFile(`${dir}/waf.yaml`, yaml!);
    const r = await cli(["serve", "--data-dir", dir]);
    assertEquals(r.code, 1, r.stderr);
    assertMatch(
      r.stderr,
      new RegExp(
        `Cannot open the ${listener} listener on 127\\.0\\.0\\.1:${port}: another process already listens there`,
      ),
    );
  }
});

Deno.test("waf user, waf help store and waf store --help list the subcommands of their group", async () => {
  const user = await cli(["user"]);
  assertEquals(user.code, 2);
  for (const sub of ["password", "ensure-admin", "rename", "repair-username"]) {
    assertMatch(user.stderr, new RegExp(`waf user ${sub} `));
  }
  const help = await cli(["help", "store"]);
  assertEquals(help.code, 0);
  assertMatch(help.stdout, /waf store backup +Write a consistent online backup/);
  assertMatch(help.stdout, /waf store check /);
  assertMatch(help.stdout, /waf help store <command>/);
  assertEquals((await cli(["store", "--help"])).stdout, help.stdout);
  const typo = await cli(["user", "pasword", "admin"]);
  assertEquals(typo.code, 2);
  assertMatch(typo.stderr, /Unknown command: "user pasword admin"[\s\S]*waf user password/);
});
