/**
 * What the real `waf` process prints: a server log of log lines only (no runtime deprecation or
 * legacy-behaviour warning), and output into a pipe that closes early ending quietly (no
 * uncaught `BrokenPipe`, no stack trace).
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { spawnWaf } from "../_helpers/process.ts";
import { tempDir } from "../_helpers/temp.ts";
import { ADMIN, type ApiTarget, call, completeSetup, login } from "../_helpers/identity.ts";
import { SERVER_DENO_FLAGS } from "../../scripts/server_flags.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const LOG_LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO |WARN |ERROR) /;

Deno.test("waf serve with the management listener behind TLS logs no deprecation or legacy-behaviour warning", async () => {
  await using dir = await tempDir();
  // tls: auto puts the management listener behind its TLS connection front (net/listen.ts),
  // where Deno warned once a request had been answered.
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    'server:\n  data:\n    listen: "127.0.0.1:0"\n    https_listen: "127.0.0.1:0"\n' +
      '  management:\n    listen: "127.0.0.1:0"\n    tls: auto\n',
  );
  await using waf = spawnWaf(["serve", "--data-dir", dir]);
  const m = await waf.waitFor(/data_plane=127\.0\.0\.1:(\d+) management=https:\/\/[\d.]+:(\d+)/);
  const client = Deno.createHttpClient({
    caCerts: [await Deno.readTextFile(`${dir}/tls/ca.crt`)],
  });
  for (const path of ["/health/live", "/health/ready", "/api/setup/status", "/console"]) {
    const r = await fetch(`https://localhost:${m[2]}${path}`, { client });
    ok(r.status < 500, `${path}: ${r.status}`);
    await r.body?.cancel();
  }
  // A body still passes the TLS front whole: a malformed one is answered with its position.
  const login = await fetch(`https://localhost:${m[2]}/api/auth/login`, {
    client,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"username": "admin",\n "password": }',
  });
  assertEquals(login.status, 400);
  const { error } = await login.json();
  assertEquals([error.code, error.line, error.column], ["BAD_REQUEST", 2, 14]);
  const data = await fetch(`http://127.0.0.1:${m[1]}/`);
  assertEquals(data.status, 404);
  await data.body?.cancel();
  client.close();
  assertEquals(await waf.stop("SIGTERM"), 0);
  const lines = waf.output().trimEnd().split("\n");
  assertMatch(waf.output(), /INFO {2}stopped/);
  for (const line of lines) {
    ok(!/deprecat|legacy behavio/i.test(line), `a warning in the server log: ${line}`);
    assertMatch(line, LOG_LINE, "every line the server prints is a log line");
  }
});

Deno.test("waf serve with the shipped flags logs no legacy-abort warning after a signed-in bodiless POST", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n',
  );
  // The flags of `deno task start`: without --unstable-no-legacy-abort Deno warned here.
  await using waf = spawnWaf(["serve", "--data-dir", dir], {}, SERVER_DENO_FLAGS);
  const m = await waf.waitFor(/management=http:\/\/[\d.]+:(\d+)/);
  const server: ApiTarget = {
    dir,
    api: (path, init) => fetch(`http://127.0.0.1:${m[1]}${path}`, init),
  };
  await completeSetup(server);
  const session = await login(server, ADMIN.username, ADMIN.password);
  for (
    const [method, path] of [
      ["POST", "/api/ops/tasks/store-backup/run"],
      ["DELETE", "/api/sites/no-such-site"],
    ] as const
  ) {
    const r = await call(server, method, path, { session });
    ok(r.status < 500, `${method} ${path}: ${r.status}`);
    await r.body?.cancel();
  }
  assertEquals(await waf.stop("SIGTERM"), 0);
  for (const line of waf.output().trimEnd().split("\n")) {
    ok(!/deprecat|legacy behavio/i.test(line), `a warning in the server log: ${line}`);
  }
});

/** Runs `waf <args>` with stdout into a pipe whose reading end is closed before waf writes. */
async function intoClosedPipe(
  args: readonly string[],
): Promise<{ code: number; stderr: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, ...args],
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  await child.stdout.cancel();
  const stderr = await new Response(child.stderr).text();
  return { code: (await child.status).code, stderr };
}

Deno.test("waf help and waf --version into a pipe that is already closed exit 0 without a stack trace", async () => {
  for (const args of [["help"], ["--version"], ["help", "serve"]]) {
    const r = await intoClosedPipe(args);
    assertEquals(r.code, 0, `waf ${args.join(" ")}: ${r.stderr}`);
    assertEquals(r.stderr, "", `waf ${args.join(" ")}`);
  }
});

Deno.test("an operator command into a closed pipe keeps its own exit code and prints no stack trace", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir}/waf.yaml`, 'server:\n  data:\n    listen: "127.0.0.1:0"\n');
  const check = await intoClosedPipe(["config", "check", "--data-dir", dir]);
  assertEquals([check.code, check.stderr], [0, ""]);
  const lang = await intoClosedPipe(["lang", "show", "--data-dir", dir]);
  assertEquals([lang.code, lang.stderr], [0, ""]);
});

Deno.test("waf help | head -n 0 in bash: waf exits 0 and prints nothing on stderr", async () => {
  const out = await new Deno.Command("bash", {
    args: [
      "-c",
      `"$0" run -A "$1" help 2>"$2" | head -n 0; echo "\${PIPESTATUS[0]}"`,
      Deno.execPath(),
      MAIN,
      "/dev/stdout",
    ],
    stdin: "null",
  }).output();
  assertEquals(new TextDecoder().decode(out.stdout), "0\n");
});

Deno.test("waf serve whose stderr closes after the first line keeps serving and stops cleanly", async () => {
  await using dir = await tempDir();
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n',
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "serve", "--data-dir", dir],
    stdout: "null",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  try {
    const reader = child.stderr.getReader();
    let first = "";
    while (!first.includes("waf started")) {
      const { value, done } = await reader.read();
      if (done) break;
      first += new TextDecoder().decode(value);
    }
    const management = /management=(http:\/\/[\d.:]+)/.exec(first)?.[1];
    if (!management) throw new Error(`no management address in: ${first}`);
    await reader.cancel();
    // The shutdown logs "shutting down" and "stopped" after the pipe has closed.
    for (let i = 0; i < 3; i++) {
      const r: Response = await fetch(`${management}/health/ready`);
      assertEquals(r.status, 200);
      await r.body?.cancel();
    }
    child.kill("SIGTERM");
    assertEquals((await child.status).code, 0);
    const log = await Deno.readTextFile(`${dir}/logs/waf.log`);
    assertMatch(log, /INFO {2}shutting down/);
    assertMatch(log, /INFO {2}stopped/);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    await child.status;
  }
});
