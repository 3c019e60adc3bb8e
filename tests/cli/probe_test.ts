import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { cli } from "../_helpers/cli.ts";
import { tempDir } from "../_helpers/temp.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { createCa, createLeaf } from "../../mod/tls/x509.ts";

function serve(options: { cert?: string; key?: string } = {}) {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {}, ...options },
    () => new Response("hello", { headers: { "x-probe": "yes" } }),
  );
}

async function probe(...args: string[]) {
  await using dir = await tempDir();
  return await cli(["temporary-online", "probe", ...args, "--data-dir", `${dir}`]);
}

Deno.test("the probe reports TCP and HTTP against a plain local server, skipping DNS and TLS", async () => {
  await using server = serve();
  const r = await probe("--url", `http://127.0.0.1:${server.addr.port}/path?q=1`);
  assertEquals(r.code, 0, r.stdout + r.stderr);
  assertMatch(
    r.stdout,
    /Probing http:\/\/127\.0\.0\.1:\d+\/path\?q=1 \(timeout 5000 ms per step\)/,
  );
  assertMatch(r.stdout, /DNS\s+skipped\s+the host is an IP address/);
  assertMatch(r.stdout, /TCP\s+ok\s+\d+\.\d ms\s+127\.0\.0\.1:\d+/);
  assertMatch(r.stdout, /TLS\s+skipped\s+plain http/);
  assertMatch(
    r.stdout,
    /HTTP\s+ok\s+\d+\.\d ms\s+200 OK, \d+ header bytes, time to first byte \d+\.\d ms/,
  );
});

Deno.test("the probe resolves a host name with the system resolver", async () => {
  await using server = serve();
  const r = await probe("--url", `http://localhost:${server.addr.port}/`, "--json");
  assertEquals(r.code, 0, r.stdout);
  const report = JSON.parse(r.stdout);
  assertEquals(report.dns.status, "ok");
  ok(report.dns.detail.addresses.includes("127.0.0.1"), JSON.stringify(report.dns));
  assertEquals(report.tcp.detail.address, "127.0.0.1");
  assertEquals(report.http.detail.status, 200);
  ok(report.http.detail.headerBytes > 20);
  ok(report.http.ms >= 0 && report.tcp.ms >= 0 && report.dns.ms >= 0);
});

Deno.test("the probe reports TLS protocol, ALPN and certificate against a server with a local CA", async () => {
  const now = Date.now();
  const ca = await createCa("Probe Test CA", now, systemRandom);
  const leaf = await createLeaf(
    ca,
    { commonName: "localhost", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"] },
    now,
    systemRandom,
  );
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir}/ca.pem`, ca.cert);
  await using server = serve({ cert: leaf.cert, key: leaf.key });
  const url = `https://localhost:${server.addr.port}/`;

  const r = await probe("--url", url, "--ca-file", `${dir}/ca.pem`);
  assertEquals(r.code, 0, r.stdout + r.stderr);
  assertMatch(
    r.stdout,
    /TLS\s+ok\s+\d+\.\d ms\s+TLSv1\.3, ALPN http\/1\.1, subject CN=localhost, issuer CN=Probe Test CA, expires \d{4}-\d\d-\d\dT/,
  );
  assertMatch(r.stdout, /HTTP\s+ok .* 200 OK/);

  const ip = await probe(
    "--url",
    `https://127.0.0.1:${server.addr.port}/`,
    "--ca-file",
    `${dir}/ca.pem`,
  );
  assertEquals(ip.code, 0, ip.stdout);

  const untrusted = await probe("--url", url, "--timeout", "3s");
  assertEquals(untrusted.code, 1);
  assertMatch(untrusted.stdout, /TLS\s+failed\s+\d+\.\d ms\s+.*(certificate|issuer)/i);
  assertMatch(untrusted.stdout, /HTTP\s+not run/);
});

Deno.test("the probe reports a refused connection and a silent server as failures", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  const silent = await probe("--url", `http://127.0.0.1:${port}/`, "--timeout", "300ms");
  assertEquals(silent.code, 1);
  assertMatch(silent.stdout, /TCP\s+ok/);
  assertMatch(silent.stdout, /HTTP\s+failed\s+\d+\.\d ms\s+timed out after 300 ms/);
  listener.close();
  await accepting.catch(() => {});
  for (const c of held) c.close();

  const refused = await probe("--url", `http://127.0.0.1:${port}/`, "--timeout", "2s");
  assertEquals(refused.code, 1);
  assertMatch(refused.stdout, /TCP\s+failed\s+.*(ECONNREFUSED|refused)/i);
  assertMatch(refused.stdout, /HTTP\s+not run/);
});

Deno.test("the probe refuses a missing or non-http URL and a bad timeout with exit 2", async () => {
  assertEquals((await probe()).code, 2);
  assertMatch((await probe("--url", "ftp://example.test/")).stderr, /http:\/\/ or https:\/\//);
  assertEquals((await probe("--url", "not a url")).code, 2);
  assertEquals((await probe("--url", "http://127.0.0.1/", "--timeout", "soon")).code, 2);
  assertEquals((await probe("--url", "http://127.0.0.1/", "--timeout", "0s")).code, 2);
  const zh = await cli(["temporary-online", "probe", "--url", "ftp://x/"], {
    env: { lang: "zh-CN" },
  });
  assertMatch(zh.stderr, /选项 --url 需要 http:\/\/ 或 https:\/\/ 地址/);
});
