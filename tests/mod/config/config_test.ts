import { assertEquals, ok } from "../../_helpers/assert.ts";
import {
  defaultConfig,
  durationMs,
  parseConfigText,
  validateConfig,
  writeDefaultConfig,
} from "../../../mod/config/config.ts";
import { dataWorkerCount } from "../../../mod/config/config_schema.ts";
import { DEFAULT_CONFIG_YAML } from "../../../mod/config/config_default.ts";

function problems(yaml: string): { path: string; message: string }[] {
  const result = parseConfigText(yaml);
  if (result.kind === "ok") throw new Error("expected the configuration to be invalid");
  return [...result.problems];
}

Deno.test("the commented default configuration parses to the built-in defaults", () => {
  const result = parseConfigText(DEFAULT_CONFIG_YAML);
  assertEquals(result.kind, "ok");
  if (result.kind === "ok") assertEquals(result.config, defaultConfig());
});

Deno.test("defaults match the specification", () => {
  const c = defaultConfig();
  assertEquals(c.server.data.listen, "0.0.0.0:8080");
  assertEquals(c.server.management.listen, "127.0.0.1:9443");
  assertEquals(c.server.management.tls, "off");
  assertEquals(c.storage.profile, "temporary");
  assertEquals(c.apisec.permissions, { admin: ["*"], readonly: ["read:*", "read:cluster"] });
  assertEquals(c.apisec.management_api.enabled, false);
  assertEquals(c.update.ota.enabled, false);
  assertEquals(c.update.ota.server, "");
  assertEquals(c.update.ota.channel, "stable");
  assertEquals(c.update.ota.check_interval, "6h");
  assertEquals(c.update.ota.auto_update_rules, true);
  assertEquals(c.update.ota.auto_update_binary, false);
  assertEquals(c.update.ota.verify_signature, true);
});

Deno.test("an unknown key is reported with its full path", () => {
  const p = problems("server:\n  management:\n    listen: 127.0.0.1:9443\n    lisen: x\n");
  assertEquals(p.length, 1);
  assertEquals(p[0]!.path, "server.management.lisen");
  ok(p[0]!.message.includes("unknown key"));
});

Deno.test("an unknown top-level key is reported", () => {
  assertEquals(problems("servr: {}\n")[0]!.path, "servr");
});

Deno.test("a bad listen address names the key and the expected form", () => {
  for (const bad of ["8080", "localhost:99999", "1.2.3.4:", "host:port", ":8080"]) {
    const p = problems(`server:\n  data:\n    listen: "${bad}"\n`);
    assertEquals(p[0]!.path, "server.data.listen", bad);
    ok(p[0]!.message.includes("host:port"), p[0]!.message);
  }
});

Deno.test("IPv6 listen addresses in brackets are accepted", () => {
  assertEquals(parseConfigText('server:\n  data:\n    listen: "[::1]:8080"\n').kind, "ok");
});

Deno.test("the redis challenge backend is rejected with a clear message", () => {
  const p = problems("protection:\n  bot:\n    challenge_backend: redis\n");
  assertEquals(p[0]!.path, "protection.bot.challenge_backend");
  ok(p[0]!.message.includes("process memory"));
});

Deno.test("a non-loopback management listener without TLS is refused", () => {
  const p = problems('server:\n  management:\n    listen: "0.0.0.0:9443"\n');
  assertEquals(p[0]!.path, "server.management.tls");
  ok(p[0]!.message.includes("0.0.0.0"));
  const withTls = parseConfigText(
    'server:\n  management:\n    listen: "0.0.0.0:9443"\n    tls: auto\n',
  );
  assertEquals(withTls.kind, "ok");
});

Deno.test("explicit TLS files need both cert_file and key_file", () => {
  const p = problems("server:\n  management:\n    tls:\n      cert_file: a.pem\n");
  assertEquals(p[0]!.path, "server.management.tls");
});

Deno.test("storage sinks are validated", () => {
  assertEquals(
    problems('storage:\n  postgresql:\n    dsn: "mysql://x"\n')[0]!.path,
    "storage.postgresql.dsn",
  );
  assertEquals(
    problems('storage:\n  redis:\n    url: "http://x"\n')[0]!.path,
    "storage.redis.url",
  );
  assertEquals(
    problems("storage:\n  profile: prod\n")[0]!.path,
    "storage.profile",
  );
  const okSinks = parseConfigText(
    'storage:\n  postgresql:\n    dsn: "postgres://u@127.0.0.1:5432/test"\n  redis:\n    url: "redis://127.0.0.1:6379"\n',
  );
  assertEquals(okSinks.kind, "ok");
});

Deno.test("permission expressions and role names are validated", () => {
  assertEquals(
    problems('apisec:\n  permissions:\n    admin: ["*"]\n    ops: ["read:sites", "bad perm"]\n')[0]!
      .path,
    "apisec.permissions.ops[1]",
  );
  const role = problems('apisec:\n  permissions:\n    admin: ["*"]\n    "a:b": ["read:*"]\n')[0]!;
  assertEquals(role.path, "apisec.permissions.a:b");
  assertEquals(
    role.message,
    "expected a role name of ASCII letters, digits, '.', '_' or '-'",
    'the role-name rule, not zod\'s generic "Invalid key in record"',
  );
});

Deno.test("a role map naming a permission the specification does not have stops start-up, with a suggestion", () => {
  const found = problems(
    'apisec:\n  permissions:\n    admin: ["*"]\n    ops: ["read:*", "read:site", "writ:*", "nope:x"]\n',
  );
  assertEquals(found.map((p) => p.path), [
    "apisec.permissions.ops[1]",
    "apisec.permissions.ops[2]",
    "apisec.permissions.ops[3]",
  ]);
  ok(found[0]!.message.includes('unknown permission "read:site"'), found[0]!.message);
  ok(found[0]!.message.endsWith('did you mean "read:sites"?'), found[0]!.message);
  ok(found[1]!.message.endsWith('did you mean "write:*"?'), found[1]!.message);
  const fine = parseConfigText(
    'apisec:\n  permissions:\n    admin: ["*"]\n    ops: ["use:*", "manage:api_tokens"]\n',
  );
  assertEquals(fine.kind, "ok");
});

Deno.test("YAML syntax errors and duplicate keys are reported", () => {
  assertEquals(problems("server: [\n")[0]!.path, "(yaml)");
  assertEquals(problems("logging:\n  level: info\n  level: debug\n")[0]!.path, "(yaml)");
});

Deno.test("durationMs() converts each unit", () => {
  assertEquals(durationMs("250ms"), 250);
  assertEquals(durationMs("10s"), 10_000);
  assertEquals(durationMs("6h"), 21_600_000);
});

Deno.test("writeDefaultConfig() creates a private data directory and file", async () => {
  const root = await Deno.makeTempDir();
  try {
    await writeDefaultConfig(`${root}/data/waf.yaml`);
    assertEquals((await Deno.stat(`${root}/data`)).mode! & 0o777, 0o700);
    assertEquals((await Deno.stat(`${root}/data/waf.yaml`)).mode! & 0o777, 0o600);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("an unknown key suggests the nearest documented one and lists the keys at its level", () => {
  const r = validateConfig({ server: { data: { lisen: "127.0.0.1:8080" } }, stroage: {} });
  assertEquals(r.kind, "invalid");
  const found = r.kind === "invalid" ? r.problems : [];
  const listen = found.find((p) => p.path === "server.data.lisen")!;
  assertEquals(
    listen.message,
    'unknown key: did you mean "listen"? Keys here: listen, https_listen, workers, limits',
  );
  ok(found.find((p) => p.path === "stroage")!.message.includes('did you mean "storage"?'));
  const far = validateConfig({ server: { zzzzzzzz: 1 } });
  const message = far.kind === "invalid" ? far.problems[0]!.message : "";
  ok(!message.includes("did you mean"), message);
  ok(message.includes("Keys here: data, management"), message);
});

Deno.test("connection limits: nginx-like defaults per listener, bad values stop start-up naming the key", () => {
  const d = validateConfig({});
  ok(d.kind === "ok");
  const data = d.config.server.data.limits;
  assertEquals(
    [data.enabled, data.header_timeout, data.body_timeout, data.keepalive_timeout],
    [true, "60s", "60s", "75s"],
  );
  assertEquals([data.max_connections, data.max_connections_per_client], [10_000, 256]);
  const mgmt = d.config.server.management.limits;
  assertEquals([mgmt.max_connections, mgmt.max_connections_per_client], [1_000, 64]);
  const bad = validateConfig({
    server: {
      data: { limits: { header_timeout: "soon", max_connections_per_client: -1 } },
      management: { limits: { keepalive: "5s" } },
    },
  });
  const paths = bad.kind === "invalid" ? bad.problems.map((p) => p.path).sort() : [];
  assertEquals(paths, [
    "server.data.limits.header_timeout",
    "server.data.limits.max_connections_per_client",
    "server.management.limits.keepalive",
  ]);
});

Deno.test("a bad duration explains what a duration is and shows the value", () => {
  const r = validateConfig({ server: { shutdown_timeout: "10 seconds" } });
  const p = r.kind === "invalid" ? r.problems[0]! : undefined;
  assertEquals(p?.path, "server.shutdown_timeout");
  assertEquals(
    p?.message,
    'expected a duration: a whole number followed by a unit: ms (milliseconds), s (seconds), m (minutes), h (hours) or d (days), with no space, e.g. "10s", "5m", "1h"; got "10 seconds"',
  );
});

Deno.test("server.data.workers takes auto or 1..32 and names the key otherwise", () => {
  for (const bad of [0, 33, 2.5, "lots", -1]) {
    const r = validateConfig({ server: { data: { workers: bad } } });
    const p = r.kind === "invalid" ? r.problems[0] : undefined;
    assertEquals(p?.path, "server.data.workers", String(bad));
    assertEquals(p?.message, 'expected "auto" or a whole number from 1 to 32');
  }
  for (const good of ["auto", 1, 2, 32] as const) {
    const r = validateConfig({ server: { data: { workers: good } } });
    assertEquals(r.kind === "ok" ? r.config.server.data.workers : undefined, good);
  }
  const r = validateConfig({});
  assertEquals(r.kind === "ok" ? r.config.server.data.workers : undefined, "auto");
  assertEquals(dataWorkerCount("auto", 4), 4);
  assertEquals(dataWorkerCount("auto", 64), 32);
  assertEquals(dataWorkerCount(3, 64), 3);
});

Deno.test("an apisec pattern in waf.yaml whose RE2 program is too large fails naming its key", () => {
  const yaml = `apisec:
  rate_limits:
    - id: slow
      method: POST
      path_pattern: "^/api/[\\\\s\\\\S]{1,1000}[\\\\s\\\\S]{1,1000}/x"
      requests: 10
      window: 1m
`;
  const [problem] = problems(yaml);
  assertEquals(problem?.path, "apisec.rate_limits[0].path_pattern");
  ok(problem?.message.startsWith("Pattern too large"), problem?.message);
  ok(problem?.message.includes("over the limit of 1000"), problem?.message);
});
