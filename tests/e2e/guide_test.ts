/**
 * docs/guide.md's curl walk-through (the management API by example, continuing the README's
 * "Try it") against a real server (both listeners on port 0, a real store, a real upstream and a
 * scripted AI provider on loopback), run by bash with curl and jq exactly as an operator would
 * type it. `tests/testdata/guide_walkthrough.sh` holds the commands, after the README's own steps
 * that the guide builds on; the first test checks that every command line of every curl block of
 * the guide is in it, unchanged and in order, so the guide cannot drift from what runs here.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { codeAt, TOKENS_ON } from "../_helpers/api_access.ts";
import { startFakeProvider } from "../_helpers/openai_server.ts";
import { HAS_PEBBLE, startPebble } from "../_helpers/pebble.ts";
import { startTestServer } from "../_helpers/server.ts";
import { ignoreWithout, missing, probe, runs } from "../_helpers/services.ts";
import { tempDir } from "../_helpers/temp.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const ROOT = new URL("../../", import.meta.url);
const SCRIPT = new URL("tests/testdata/guide_walkthrough.sh", ROOT);

/** The command lines of the guide's fenced `sh` blocks that use curl (whole-line comments out). */
async function guideBlocks(): Promise<string[][]> {
  const guide = await Deno.readTextFile(new URL("docs/guide.md", ROOT));
  const blocks: string[][] = [];
  for (const m of guide.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = m[1]!.split("\n").filter((l) => l.trim() !== "" && !l.trim().startsWith("#"));
    if (lines.some((l) => l.includes("curl "))) blocks.push(lines);
  }
  return blocks;
}

Deno.test("every command of docs/guide.md's curl examples is in the walk-through script, unchanged and in order", async () => {
  const script = (await Deno.readTextFile(SCRIPT)).split("\n");
  const blocks = await guideBlocks();
  ok(blocks.length >= 5, "the guide's curl blocks are found");
  let at = 0;
  for (const block of blocks) {
    for (const line of block) {
      const found = script.indexOf(line, at);
      ok(found >= 0, `guide line not in ${SCRIPT.pathname} (in this order):\n${line}`);
      at = found + 1;
    }
  }
});

/** The walk-through's tools that are not installed. */
const ABSENT: string[] = [];
for (const bin of ["curl", "jq", "bash"]) {
  if (!(await probe(bin, () => runs(bin)))) ABSENT.push(bin);
}

const status = (headers: string) => Number(/^HTTP\/[\d.]+ (\d{3})/.exec(headers)?.[1]);

Deno.test({
  name:
    "docs/guide.md's curl walk-through works against a real server, step by step (needs curl, jq and bash)",
  ignore: ignoreWithout(ABSENT.length === 0),
}, async () => {
  if (ABSENT.length > 0) throw missing(`not installed: ${ABSENT.join(", ")}`);
  await using up = startUpstream();
  await using provider = startFakeProvider();
  provider.script({ text: "Nothing was blocked today." });
  await using s = await startTestServer({ config: TOKENS_ON });
  await using work = await tempDir();
  // The ACME example orders from pebble (on loopback, validating on the data plane's port)
  // instead of Let's Encrypt staging; without pebble, from a directory that refuses at once.
  await using pebble = HAS_PEBBLE
    ? await startPebble({ httpPort: Number(new URL(s.dataUrl).port) })
    : undefined;
  const acmeOrder = pebble
    ? JSON.stringify({
      directory: pebble.directory,
      directory_ca: pebble.ca,
      email: "ops@example.com",
    })
    : '{"directory":"https://127.0.0.1:9/dir","email":"ops@example.com"}';
  const out = `${work}/out`;
  await Deno.mkdir(out);
  // The authenticator: each code is for the next 30-second step of the server's clock, so each
  // is new (a code works once) and none needs a real wait.
  const control = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async () => {
    const secret = JSON.parse(await Deno.readTextFile(`${work}/setup.json`)).secret as string;
    s.clock.advance(30_000);
    return new Response(codeAt(s, secret));
  });
  try {
    const runnable = (await Deno.readTextFile(SCRIPT))
      .replaceAll("http://127.0.0.1:9443", s.managementUrl)
      .replaceAll("http://127.0.0.1:8080", s.dataUrl)
      .replaceAll("http://127.0.0.1:3000", up.url)
      .replaceAll("https://api.openai.com/v1", provider.baseUrl)
      .replaceAll("./data/", `${s.dir}/`)
      .replace('{"directory":"staging","email":"ops@example.com"}', acmeOrder)
      // The placeholders sit inside single quotes: close them around the command substitution.
      .replaceAll(/<6 digits from the app>|<next code>|<a later code>/g, `'"$(code)"'`)
      .replaceAll(/^#> (\w+)$/gm, 'exec >"$OUT/$1"');
    const preamble = `set -euo pipefail
OUT=${JSON.stringify(out)}
code() { curl -s http://127.0.0.1:${control.addr.port}/code; }
`;
    await Deno.writeTextFile(`${work}/walk.sh`, preamble + runnable);
    const run = await new Deno.Command("bash", {
      args: [`${work}/walk.sh`],
      cwd: `${work}`,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(run.stderr);
    assertEquals(run.code, 0, stderr);
    const text = (step: string) => Deno.readTextFileSync(`${out}/${step}`);
    const json = (step: string) => JSON.parse(text(step));

    assertEquals(json("health").status, "ok");
    ok(text("ready").length > 0);
    assertEquals(status(text("no_site")), 404);
    assertMatch(text("no_site"), /No site is configured for this host/);
    assertMatch(text("no_site"), /x-waf-trace-id: [0-9a-f]{32}/i);

    assertMatch(text("setup_url"), /^http:\/\/127\.0\.0\.1:\d+\/setup#token=/);
    assertEquals(json("setup").user.username, "admin");
    assertEquals(json("login").user.username, "admin");
    assertEquals(json("users").items.map((u: { username: string }) => u.username), ["admin"]);

    assertEquals(json("site_create").name, "shop");
    assertEquals(status(text("pass")), 200);
    assertEquals(status(text("sqli")), 403);
    assertEquals(json("chain").action, "block");
    assertEquals(json("chain").finding.class, "sqli");

    ok(json("ip_block").id.startsWith("ip__"), text("ip_block"));
    assertEquals(json("trust_proxy").trusted_proxies, ["127.0.0.1/32"]);
    assertEquals(status(text("ip_blocked")), 403, "the guide's IP block blocks");
    const blockedTrace = /x-waf-trace-id: ([0-9a-f]{32})/i.exec(text("ip_blocked"))![1]!;
    const record = JSON.parse((await s.dataPlane.accessLog.get(blockedTrace))!.record);
    const last = record.chain.at(-1);
    assertEquals([last.check, last.result], ["ip_list", "block"]);
    assertEquals(last.rule, json("ip_block").id, "the rule the guide shows is the entry's id");

    assertEquals(json("apisec_config").auth.secret_set, true);
    ok(!text("apisec_config").includes("change-me-to-32"), "the secret is not returned");
    assertEquals(status(text("apisec_schema")), 403);
    assertEquals(status(text("apisec_auth")), 401);
    assertMatch(text("apisec_auth"), /www-authenticate: Bearer realm="api"/i);
    assertEquals(text("apisec_limit").trim(), "200 200 429");
    assertEquals(json("apisec_validate").schema, "create-order");
    assertEquals(json("apisec_validate").violations[0].code, "missing_header");
    const endpoints = json("apisec_endpoints").items.map((e: { template: string }) => e.template);
    ok(endpoints.includes("/api/orders") && endpoints.includes("/login"), text("apisec_endpoints"));

    assertMatch(json("token_create").token, /^waf_[A-Za-z0-9_-]{43}$/);
    assertEquals(json("token_sites").items.length, 1);
    assertEquals(json("token_site_create").name, "blog");
    assertEquals(json("token_users").error.code, "FORBIDDEN");
    assertEquals(json("token_audit").type, "token");
    ok(!text("token_list").includes(json("token_create").token), "metadata only");
    assertEquals(json("token_revoke").item.revoked, true);
    assertEquals(json("token_revoked").error.code, "UNAUTHORIZED");

    assertMatch(json("totp_setup").qr_code, /^data:image\/svg\+xml;base64,/);
    ok((await Deno.readTextFile(`${work}/qr.svg`)).includes("<svg"), "the QR code decodes");
    assertEquals(json("totp_enable").user?.totp_enabled, true, text("totp_enable"));
    assertEquals(json("totp_login").user.username, "admin");
    assertEquals(json("totp_disable").user.totp_enabled, false);
    assertEquals(json("relogin").user.username, "admin");

    assertEquals(json("version").schema_version, 5);
    // The walk-through's server runs in-process with one worker: the main thread.
    assertEquals([json("data_plane").workers, json("data_plane").threads], [1, []]);
    ok(Array.isArray(json("notifications").items));
    assertEquals(json("backup").error.code, "BACKUP_EXPORT_NOT_IMPLEMENTED");
    assertEquals(json("ota").error.code, "OTA_UPDATES_UNAVAILABLE");
    assertEquals(json("ai_config").enabled, true);
    // The answer streams as Server-Sent Events: its pieces join into the scripted answer.
    const answer = [...text("ai_message").matchAll(/^data: (\{"text".*\})$/gm)]
      .map((m) => JSON.parse(m[1]!).text).join("");
    assertEquals(answer, "Nothing was blocked today.");
    assertMatch(text("ai_message"), /^event: done$/m);

    // Monitoring: the scrape counts the walk-through's own traffic (the sqli and the IP block).
    assertMatch(
      text("metrics"),
      /^waf_requests_total\{site="shop",action="block",status_class="4xx"\} [1-9]/m,
    );
    ok(json("monitor_summary").blocked >= 2, text("monitor_summary"));
    assertEquals(json("monitor_summary").blocked_classes.sqli, 1);
    ok(typeof json("monitor_series").requests === "number", text("monitor_series"));
    // The replay holds the walk-through's blocked requests, with their trace ids.
    const frames = [...text("realtime").matchAll(/^event: access\.blocked\ndata: (.*)$/gm)]
      .map((m) => JSON.parse(m[1]!));
    ok(frames.some((f) => f.data.trace_id === blockedTrace), text("realtime"));
    assertEquals(json("channel_create").item.settings.secret_set, true);
    ok(!text("channel_create").includes("s3cret-signing-key"), "the secret is not returned");
    assertEquals(json("channel_test").delivery.event, "test");
    assertEquals(json("channel_deliveries").event, "test");
    assertEquals(json("time_sync").servers, []);
    assertEquals(json("time_reselect").error.code, "TIME_SERVERS_NOT_CONFIGURED");
    assertMatch(json("cluster_token").token, /^wafjoin\.[0-9a-f]{16}\./);
    ok(!text("cluster_nodes").includes(json("cluster_token").token), "the secret is shown once");
    assertEquals(json("cluster_nodes").items, []);
    assertEquals(json("cluster_health").mode, "standalone");

    ok(text("ops_tasks").includes("store-backup "), text("ops_tasks"));
    assertEquals(json("ops_backup").result, "ok", text("ops_backup"));
    ok(json("storage").store.bytes > 0, text("storage"));
    assertEquals(json("storage_sink").dsn, "postgres://waf:***@127.0.0.1:5432/waf");
    ok(!text("storage_sink").includes("secret@"), "the DSN's password is not returned");
    assertEquals(json("storage_cleanup").dry_run, true);
    if (pebble) {
      assertEquals(json("acme_order").status, "valid", text("acme_order"));
      assertMatch(json("acme_state").issuer, /Pebble/);
      ok(json("acme_state").renew_after !== null, text("acme_state"));
    } else {
      assertEquals(json("acme_order").code, "ACME_DIRECTORY_UNREACHABLE", text("acme_order"));
      assertEquals(json("acme_state").status, "failed");
    }
  } finally {
    await control.shutdown();
  }
});
