import { assertEquals, assertMatch, assertRejects, ok } from "../../_helpers/assert.ts";
import { cli } from "../../_helpers/cli.ts";
import {
  ADMIN,
  call,
  callJson,
  completeSetup,
  login,
  setCookies,
  setupToken,
} from "../../_helpers/identity.ts";
import { createTestApp, startTestServer } from "../../_helpers/server.ts";
import { setupReceipt, SetupTokenError } from "../../../mod/identity/setup_token.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { startServer } from "../../../app/server.ts";
import { testConfig } from "../../_helpers/server.ts";
import { FakeClock } from "../../../mod/core/clock.ts";
import { systemRandom } from "../../../mod/core/random.ts";

const STRONG = "k3T9_vQx-2LmZpR8wYb4NcHd6JfGs1Ua0EoIi7Xy5Wt";
const tokenHeader = (token: string) => ({ "x-waf-setup-token": token });

Deno.test("setup status is public and reports only whether setup is required", async () => {
  await using server = await createTestApp({ areas: ["identity"] });
  const before = await callJson(server, "GET", "/api/setup/status");
  assertEquals(before.status, 200);
  assertEquals(before.body, { setup_required: true });
  await completeSetup(server);
  assertEquals((await callJson(server, "GET", "/api/setup/status")).body, {
    setup_required: false,
  });
});

Deno.test("start-up logs the base setup URL, the setup file path and the receipt, never the token", async () => {
  await using server = await startTestServer();
  const token = await setupToken(server);
  const line = server.logs.find((l) => l.includes("setup required"))!;
  ok(line, server.logs.join("\n"));
  ok(line.includes(`setup_url=${server.managementUrl}/setup `), line);
  ok(line.includes(`setup_file=${server.dir}/runtime/setup.url`), line);
  ok(line.includes(`receipt=${setupReceipt(token)}`), line);
  for (const l of server.logs) ok(!l.includes(token), l);
  ok(!server.logs.join("\n").includes("#token="));
});

Deno.test("setup.url holds the complete link, mode 0600, under the runtime folder", async () => {
  await using server = await startTestServer();
  const path = `${server.dir}/runtime/setup.url`;
  const text = await Deno.readTextFile(path);
  assertMatch(text, new RegExp(`^${server.managementUrl}/setup#token=[A-Za-z0-9_-]{43}\\n$`));
  assertEquals((await Deno.stat(path)).mode! & 0o777, 0o600);
  assertEquals((await Deno.stat(`${server.dir}/runtime`)).mode! & 0o777, 0o700);
});

Deno.test("a missing or wrong setup token answers 401 on every setup mutation", async () => {
  await using server = await createTestApp({ areas: ["identity"] });
  const token = await setupToken(server);
  const wrong = token.slice(0, -1) + (token.endsWith("A") ? "B" : "A");
  for (const headers of [{}, tokenHeader(wrong), tokenHeader(""), tokenHeader(token + "x")]) {
    const probe = await callJson(server, "POST", "/api/setup/probe", { headers });
    assertEquals(probe.status, 401);
    assertEquals(probe.body.error && (probe.body.error as { code: string }).code, "UNAUTHORIZED");
    const create = await callJson(server, "POST", "/api/setup", { headers, body: ADMIN });
    assertEquals(create.status, 401);
  }
  // The probe cookie alone does not authorise a draft change.
  const ok1 = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader(token) });
  const cookie = `waf_setup=${setCookies(ok1).get("waf_setup")!.value}`;
  await ok1.body?.cancel();
  const patch = await call(server, "PATCH", "/api/setup/draft", {
    headers: { cookie },
    body: { profile: "strict" },
  });
  assertEquals(patch.status, 401);
  await patch.body?.cancel();
  assertEquals((await callJson(server, "GET", "/api/setup/status")).body.setup_required, true);
});

Deno.test("the probe sets a short-lived HttpOnly SameSite=Strict setup cookie and describes the host", async () => {
  await using server = await createTestApp({ areas: ["identity"] });
  const res = await call(server, "POST", "/api/setup/probe", {
    headers: tokenHeader(await setupToken(server)),
  });
  assertEquals(res.status, 200);
  const probe = await res.json();
  ok(Number.isInteger(probe.cpu_cores) && probe.cpu_cores >= 1);
  assertEquals(probe.disk_writable, true);
  ok(["low", "balanced", "strict"].includes(probe.suggested_profile));
  const cookie = setCookies(res).get("waf_setup")!;
  assertEquals(cookie.attrs["httponly"], "");
  assertEquals(cookie.attrs["samesite"], "Strict");
  assertEquals(cookie.attrs["max-age"], "900");
  assertEquals(cookie.attrs["secure"], undefined, "no TLS on this listener");
});

Deno.test("the draft needs the setup session; its changes need the token too; it never holds a password", async () => {
  await using server = await createTestApp({ areas: ["identity"] });
  const token = await setupToken(server);
  assertEquals((await callJson(server, "GET", "/api/setup/draft")).status, 401);
  const probe = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader(token) });
  const cookie = `waf_setup=${setCookies(probe).get("waf_setup")!.value}`;
  await probe.body?.cancel();
  const headers = { cookie, ...tokenHeader(token) };
  assertEquals(
    (await callJson(server, "GET", "/api/setup/draft", { headers: { cookie } })).body,
    {},
  );
  const withPassword = await callJson(server, "PATCH", "/api/setup/draft", {
    headers,
    body: { username: "admin", password: ADMIN.password },
  });
  assertEquals(withPassword.status, 400);
  assertEquals((withPassword.body.error as { field: string }).field, "password");
  const badName = await callJson(server, "PATCH", "/api/setup/draft", {
    headers,
    body: { username: " admin" },
  });
  assertEquals((badName.body.error as { code: string }).code, "USERNAME_INVALID");
  const saved = await callJson(server, "PATCH", "/api/setup/draft", {
    headers,
    body: { username: "ops.admin", profile: "strict" },
  });
  assertEquals(saved.status, 200);
  assertEquals(
    (await callJson(server, "GET", "/api/setup/draft", { headers: { cookie } })).body,
    { username: "ops.admin", profile: "strict" },
  );
  // The page offers no language (the console is English): a language is no draft field.
  const language = await callJson(server, "PATCH", "/api/setup/draft", {
    headers,
    body: { language: "de" },
  });
  assertEquals(language.status, 400);
  const rows = server.db.prepare("SELECT value FROM settings").all() as { value: string }[];
  for (const r of rows) ok(!r.value.includes(ADMIN.password));
});

Deno.test("POST /api/setup applies the username and password rules before creating anything", async () => {
  await using server = await createTestApp({ areas: ["identity"] });
  const headers = tokenHeader(await setupToken(server));
  const name = await callJson(server, "POST", "/api/setup", {
    headers,
    body: { username: "admin\u00a0", password: ADMIN.password },
  });
  assertEquals(name.status, 400);
  assertEquals((name.body.error as { code: string }).code, "USERNAME_INVALID");
  const pw = await callJson(server, "POST", "/api/setup", {
    headers,
    body: { username: "admin", password: "admin12345" },
  });
  assertEquals(pw.status, 400);
  const error = pw.body.error as { code: string; rules: string[] };
  assertEquals(error.code, "PASSWORD_POLICY");
  ok(error.rules.includes("contains_username") && error.rules.includes("character_classes"));
  assertEquals((await callJson(server, "GET", "/api/setup/status")).body.setup_required, true);
});

Deno.test("completing setup creates the admin, revokes the token, deletes setup.url, then every setup mutation answers 409", async () => {
  await using server = await createTestApp({ areas: ["identity"] });
  const token = await setupToken(server);
  const probe = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader(token) });
  const cookie = `waf_setup=${setCookies(probe).get("waf_setup")!.value}`;
  await probe.body?.cancel();
  const done = await callJson(server, "POST", "/api/setup", {
    headers: tokenHeader(token),
    body: ADMIN,
  });
  assertEquals(done.status, 201);
  const user = done.body.user as Record<string, unknown>;
  assertEquals(Object.keys(user).sort(), [
    "created_at",
    "disabled",
    "id",
    "role",
    "totp_enabled",
    "updated_at",
    "username",
  ]);
  assertEquals(user.username, "admin");
  assertEquals(user.role, "admin");
  await assertRejects(() => Deno.stat(`${server.dir}/runtime/setup.url`), Deno.errors.NotFound);
  const headers = { cookie, ...tokenHeader(token) };
  for (
    const [method, path, body] of [
      ["POST", "/api/setup/probe", undefined],
      ["PATCH", "/api/setup/draft", { profile: "low" }],
      ["POST", "/api/setup", { username: "second", password: "Another-Pass-7" }],
      ["GET", "/api/setup/draft", undefined],
    ] as const
  ) {
    const r = await callJson(server, method, path, { headers, body });
    assertEquals(r.status, 409, `${method} ${path}`);
    assertEquals((r.body.error as { code: string }).code, "SETUP_COMPLETE");
  }
  // Also with no token at all: completion is not a secret.
  assertEquals((await callJson(server, "POST", "/api/setup", { body: ADMIN })).status, 409);
  assertEquals(server.identity.users.list().length, 1);
});

Deno.test("two racing setup completions create exactly one admin", async () => {
  await using server = await createTestApp({ areas: ["identity"] });
  const headers = tokenHeader(await setupToken(server));
  const results = await Promise.all([
    callJson(server, "POST", "/api/setup", { headers, body: ADMIN }),
    callJson(server, "POST", "/api/setup", {
      headers,
      body: { username: "second", password: "Another-Pass-7" },
    }),
  ]);
  assertEquals(results.map((r) => r.status).sort(), [201, 409]);
  assertEquals(server.identity.users.list().length, 1);
});

Deno.test("the setup token never appears in a log line or a response", async () => {
  await using server = await startTestServer();
  const token = await setupToken(server);
  const seen: string[] = [];
  const record = async (res: Response) => {
    seen.push([...res.headers].map(([k, v]) => `${k}: ${v}`).join("\n"));
    seen.push(await res.text());
  };
  await record(await call(server, "GET", "/api/setup/status"));
  await record(await call(server, "GET", "/setup"));
  await record(await call(server, "POST", "/api/setup/probe", { headers: tokenHeader("x") }));
  const probe = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader(token) });
  const cookie = `waf_setup=${setCookies(probe).get("waf_setup")!.value}`;
  await record(probe);
  await record(
    await call(server, "PATCH", "/api/setup/draft", {
      headers: { cookie, ...tokenHeader(token) },
      body: { username: "admin" },
    }),
  );
  await record(await call(server, "GET", "/api/setup/draft", { headers: { cookie } }));
  await record(
    await call(server, "POST", "/api/setup", {
      headers: tokenHeader(token),
      body: { username: "admin", password: "weak" },
    }),
  );
  await record(
    await call(server, "POST", "/api/setup", { headers: tokenHeader(token), body: ADMIN }),
  );
  await record(await call(server, "POST", "/api/setup", { headers: tokenHeader(token) }));
  for (const text of seen) ok(!text.includes(token), text);
  for (const line of server.logs) ok(!line.includes(token), line);
  const audit = JSON.stringify(server.db.prepare("SELECT * FROM audit_log").all());
  ok(!audit.includes(token));
});

Deno.test("wrong setup tokens are limited per client: 429 with Retry-After, then allowed again", async () => {
  await using server = await createTestApp({ areas: ["identity"] });
  const token = await setupToken(server);
  for (let i = 0; i < 10; i++) {
    const r = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader("nope") });
    assertEquals(r.status, 401);
    await r.body?.cancel();
  }
  const locked = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader(token) });
  assertEquals(locked.status, 429);
  assertEquals(locked.headers.get("retry-after"), "30");
  assertEquals((await locked.json()).error.code, "TOO_MANY_ATTEMPTS");
  server.clock.advance(30_000);
  const after = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader(token) });
  assertEquals(after.status, 200);
  await after.body?.cancel();
});

Deno.test("an expired setup.url is deleted by the cleanup task and its token stops working", async () => {
  await using server = await createTestApp({ areas: ["identity"] });
  const token = await setupToken(server);
  const path = `${server.dir}/runtime/setup.url`;
  server.clock.advance(9 * 60_000);
  await server.identity.maintenance();
  await Deno.stat(path);
  server.clock.advance(60_000);
  await server.identity.maintenance();
  await assertRejects(() => Deno.stat(path), Deno.errors.NotFound);
  const r = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader(token) });
  assertEquals(r.status, 401);
  await r.body?.cancel();
  ok(server.logs.some((l) => l.includes("deleted the expired setup file")));
});

Deno.test("waf setup url rotates the token: the running server takes the new one and refuses the old", async () => {
  await using server = await startTestServer();
  const old = await setupToken(server);
  server.clock.advance(11 * 60_000); // the old link has expired; the operator asks for a new one
  const run = await cli(["setup", "url", "--data-dir", server.dir]);
  assertEquals(run.code, 0, run.stderr);
  const fresh = await setupToken(server);
  ok(fresh !== old);
  assertEquals(
    run.stdout,
    `Setup link written to ${server.dir}/runtime/setup.url (valid for 10 minutes)\nReceipt: ${
      setupReceipt(fresh)
    }\n`,
  );
  ok(!run.stdout.includes(fresh) && !run.stderr.includes(fresh));
  assertEquals((await Deno.stat(`${server.dir}/runtime/setup.url`)).mode! & 0o777, 0o600);
  assertMatch(
    await Deno.readTextFile(`${server.dir}/runtime/setup.url`),
    new RegExp(`^${server.managementUrl}/setup#`),
  );
  // The CLI's clock is real time; move the server's fake clock back into the new window.
  server.clock.set(Date.now());
  const oldTry = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader(old) });
  assertEquals(oldTry.status, 401);
  await oldTry.body?.cancel();
  const newTry = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader(fresh) });
  assertEquals(newTry.status, 200);
  await newTry.body?.cancel();
  await completeSetup(server);
  const again = await cli(["setup", "url", "--data-dir", server.dir]);
  assertEquals(again.code, 1);
  assertMatch(again.stderr, /already complete/);
});

Deno.test("a strong WAF_SETUP_TOKEN is used as the setup token", async () => {
  await using server = await startTestServer({ deps: { env: { setupToken: STRONG } } });
  assertEquals(await setupToken(server), STRONG);
  for (const l of server.logs) ok(!l.includes(STRONG), l);
  const r = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader(STRONG) });
  assertEquals(r.status, 200);
  await r.body?.cancel();
});

Deno.test("a weak or malformed WAF_SETUP_TOKEN stops start-up with a clear error that does not contain it", async () => {
  for (
    const bad of [
      "tooshort",
      "x".repeat(40),
      "abcdefghijklmnopqrstuvwxyz0123456789+/=",
      "correcthorse".repeat(3) + "\n",
    ]
  ) {
    const dir = await Deno.makeTempDir({ prefix: "waf-setup-" });
    const logger = createMemoryLogger();
    try {
      const err = await assertRejects(
        () =>
          startServer({ config: testConfig(), dataDir: dir }, {
            clock: new FakeClock(),
            random: systemRandom,
            logger,
            env: { setupToken: bad },
          }),
        SetupTokenError,
      ) as unknown as Error | undefined;
      void err;
      for (const l of logger.lines) ok(!l.includes(bad.trim()), l);
      await assertRejects(() => Deno.stat(`${dir}/runtime/setup.url`), Deno.errors.NotFound);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
});

Deno.test("a WAF_SETUP_TOKEN error message names the problem but not the value", async () => {
  const dir = await Deno.makeTempDir({ prefix: "waf-setup-" });
  try {
    const value = "leakcheck".repeat(2);
    try {
      await startServer({ config: testConfig(), dataDir: dir }, {
        clock: new FakeClock(),
        random: systemRandom,
        logger: createMemoryLogger(),
        env: { setupToken: value },
      });
      throw new Error("expected start-up to fail");
    } catch (err) {
      ok(err instanceof SetupTokenError);
      assertMatch(err.message, /WAF_SETUP_TOKEN.*32 to 256 characters/);
      ok(!err.message.includes(value));
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("setup writes audit records for the probe, the draft, failures and completion", async () => {
  await using server = await createTestApp({ areas: ["identity"] });
  const token = await setupToken(server);
  const probe = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader(token) });
  const cookie = `waf_setup=${setCookies(probe).get("waf_setup")!.value}`;
  await probe.body?.cancel();
  await (await call(server, "PATCH", "/api/setup/draft", {
    headers: { cookie, ...tokenHeader(token) },
    body: { profile: "low" },
  })).body?.cancel();
  await (await call(server, "POST", "/api/setup/probe", { headers: tokenHeader("bad") })).body
    ?.cancel();
  await (await call(server, "POST", "/api/setup", {
    headers: tokenHeader(token),
    body: { username: "admin", password: "short" },
  })).body?.cancel();
  await completeSetup(server);
  const rows = server.db.prepare(
    "SELECT action, result, detail, client_ip, trace_id FROM audit_log ORDER BY id",
  ).all() as {
    action: string;
    result: string;
    detail: string | null;
    client_ip: string;
    trace_id: string;
  }[];
  const summary = rows.map((r) => `${r.action}:${r.result}`);
  assertEquals(summary, [
    "setup.probe:success",
    "setup.draft:success",
    "setup.auth:failure",
    "setup.complete:failure",
    "setup.complete:success",
  ]);
  assertMatch(rows[2]!.detail!, /"reason":"wrong"/);
  assertMatch(rows[3]!.detail!, /PASSWORD_POLICY/);
  for (const r of rows) {
    assertEquals(r.client_ip, "127.0.0.1");
    assertMatch(r.trace_id, /^[0-9a-f]{32}$/);
  }
});

Deno.test("the protection level chosen at setup becomes the level of new sites created without one", async () => {
  await using server = await createTestApp({ areas: ["dataPlane"] });
  const headers = tokenHeader(await setupToken(server));
  const created = await callJson(server, "POST", "/api/setup", {
    headers,
    body: { ...ADMIN, profile: "strict" },
  });
  assertEquals(created.status, 201);
  const admin = await login(server, ADMIN.username, ADMIN.password);
  const site = (body: Record<string, unknown>) =>
    callJson(server, "POST", "/api/sites", {
      session: admin,
      body: { hosts: [`${body.name}.test`], upstreams: ["http://127.0.0.1:1"], ...body },
    });
  const plain = await site({ name: "plain" });
  assertEquals([plain.status, plain.body.level], [201, "strict"]);
  const chosen = await site({ name: "chosen", level: "low" });
  assertEquals(chosen.body.level, "low", "an explicit level wins");
  const replaced = await callJson(server, "PUT", `/api/sites/${chosen.body.id}`, {
    session: admin,
    body: { name: "chosen", hosts: ["chosen.test"], upstreams: ["http://127.0.0.1:1"] },
  });
  assertEquals(replaced.body.level, "strict", "a replacement without level takes the default");
});

Deno.test("the draft's protection level applies when setup completes without one", async () => {
  await using server = await createTestApp({ areas: ["dataPlane"] });
  const token = await setupToken(server);
  const probe = await call(server, "POST", "/api/setup/probe", { headers: tokenHeader(token) });
  const cookie = `waf_setup=${setCookies(probe).get("waf_setup")!.value}`;
  await probe.body?.cancel();
  const draft = await callJson(server, "PATCH", "/api/setup/draft", {
    headers: { cookie, ...tokenHeader(token) },
    body: { profile: "low" },
  });
  assertEquals(draft.status, 200);
  assertEquals(
    (await callJson(server, "POST", "/api/setup", { headers: tokenHeader(token), body: ADMIN }))
      .status,
    201,
  );
  assertEquals(server.dataPlane.sites.defaultLevel(), "low");
});
