import tls from "node:tls";
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { hostFetch } from "../_helpers/data_client.ts";
import { ADMIN, call, completeSetup, login } from "../_helpers/identity.ts";
import { spawnWaf } from "../_helpers/process.ts";
import { startTestServer, type TestTarget } from "../_helpers/server.ts";
import { siteInput, SYSTEM } from "../_helpers/sites.ts";
import { tempDir } from "../_helpers/temp.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { createCa, createLeaf, type Pem } from "../../mod/tls/x509.ts";

/** Opens TLS to 127.0.0.1 with `servername`, sends one HTTP/1.1 request, returns cert CN and reply. */
function tlsGet(
  port: number,
  servername: string,
  ca: string,
  path: string,
  alpn: string[] = ["http/1.1"],
): Promise<{ cn: string; alpn: string | false; reply: string }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect(
      { host: "127.0.0.1", port, servername, ca, ALPNProtocols: alpn },
      () => {
        const cn = String(socket.getPeerCertificate().subject?.CN ?? "");
        const negotiated = socket.alpnProtocol ?? false;
        if (negotiated === "h2") {
          socket.end();
          resolve({ cn, alpn: negotiated, reply: "" });
          return;
        }
        let reply = "";
        socket.on("data", (d: Uint8Array) => reply += new TextDecoder().decode(d));
        socket.on("end", () => resolve({ cn, alpn: negotiated, reply }));
        socket.write(`GET ${path} HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
      },
    );
    socket.on("error", reject);
  });
}

async function pki(): Promise<{ ca: Pem; a: Pem; b: Pem }> {
  const now = Date.now();
  const ca = await createCa("waf test CA", now, systemRandom);
  const a = await createLeaf(ca, { commonName: "a.test", dnsNames: ["a.test"] }, now, systemRandom);
  const b = await createLeaf(
    ca,
    { commonName: "b.test", dnsNames: ["*.b.test", "b.test"] },
    now,
    systemRandom,
  );
  return { ca, a, b };
}

Deno.test("the HTTPS listener picks each site's certificate by SNI on one port", async () => {
  const { ca, a, b } = await pki();
  await using up = startUpstream();
  await using s = await startTestServer({
    config: { server: { data: { https_listen: "127.0.0.1:0" } } },
  });
  ok(s.dataHttpsUrl);
  const port = Number(new URL(s.dataHttpsUrl).port);
  s.dataPlane.sites.create(
    siteInput({ name: "a", hosts: ["a.test"], upstreams: [up.url], tls: a }),
    SYSTEM,
  );
  s.dataPlane.sites.create(
    siteInput({ name: "b", hosts: ["*.b.test"], upstreams: [up.url], tls: b }),
    SYSTEM,
  );
  const ra = await tlsGet(port, "a.test", ca.cert, "/x");
  assertEquals(ra.cn, "a.test");
  assertMatch(ra.reply, /^HTTP\/1\.1 200/);
  assertMatch(ra.reply, /"x-forwarded-proto":"https"/);
  const rb = await tlsGet(port, "www.b.test", ca.cert, "/y");
  assertEquals(rb.cn, "b.test");
  assertMatch(rb.reply, /^HTTP\/1\.1 200/);
  const blocked = await tlsGet(port, "a.test", ca.cert, "/?id=1%27%20or%201=1--");
  assertMatch(blocked.reply, /^HTTP\/1\.1 403/);
  const trace = /x-waf-trace-id: ([0-9a-f]{32})/i.exec(blocked.reply)?.[1] ?? "";
  const rec = JSON.parse((await s.dataPlane.accessLog.get(trace))!.record);
  assertEquals(rec.proto, "https");
  assertEquals(rec.client_ip, "127.0.0.1");
  // A name no site serves gets no certificate at all.
  let refused = false;
  await tlsGet(port, "unknown.test", ca.cert, "/").catch(() => refused = true);
  ok(refused);
});

Deno.test("the HTTPS listener offers HTTP/2 by ALPN and serves it", async () => {
  const { ca, a } = await pki();
  await using up = startUpstream();
  await using s = await startTestServer({
    config: { server: { data: { https_listen: "127.0.0.1:0" } } },
  });
  const port = Number(new URL(s.dataHttpsUrl!).port);
  s.dataPlane.sites.create(
    siteInput({ name: "a", hosts: ["a.test"], upstreams: [up.url], tls: a }),
    SYSTEM,
  );
  const h2 = await tlsGet(port, "a.test", ca.cert, "/", ["h2", "http/1.1"]);
  assertEquals(h2.alpn, "h2");
  // A full HTTP/2 exchange, when curl is installed (it is on the development and CI machines).
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/ca.pem`, ca.cert);
    const out = await new Deno.Command("curl", {
      args: [
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_version} %{http_code}",
        "--http2",
        "--cacert",
        `${dir}/ca.pem`,
        "--resolve",
        `a.test:${port}:127.0.0.1`,
        `https://a.test:${port}/`,
      ],
      stdout: "piped",
      stderr: "null",
    }).output().catch(() => undefined);
    if (out) assertEquals(new TextDecoder().decode(out.stdout), "2 200");
    else console.warn("curl not installed: HTTP/2 exchange not checked");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a site change applies to requests already queued without a restart", async () => {
  await using up1 = startUpstream("one");
  await using up2 = startUpstream("two");
  await using s = await startTestServer({ deps: { clock: new FakeClock() } });
  const site = s.dataPlane.sites.create(
    siteInput({ hosts: ["127.0.0.1"], upstreams: [up1.url] }),
    SYSTEM,
  );
  // A request in flight on the old policy finishes there.
  const inFlight = fetch(`${s.dataUrl}/slow`);
  await up1.held();
  s.dataPlane.sites.update(
    site.id,
    siteInput({ hosts: ["127.0.0.1"], upstreams: [up2.url] }),
    SYSTEM,
  );
  const after = await fetch(`${s.dataUrl}/`);
  assertEquals((await after.json()).upstream, "two");
  up1.release();
  const old = await inFlight;
  assertEquals(await old.text(), "late");
});

Deno.test("a new user creates a site over the API, sees an attack blocked and finds its chain by trace id", async () => {
  await using up = startUpstream();
  await using dir = await tempDir();
  await Deno.writeTextFile(
    `${dir}/waf.yaml`,
    'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n',
  );
  await using waf = spawnWaf(["serve", "--data-dir", dir]);
  const m = await waf.waitFor(/data_plane=127\.0\.0\.1:(\d+) management=(http:\/\/[\d.:]+)/);
  const dataUrl = `http://127.0.0.1:${m[1]}`;
  // The identity helpers only need a way to the management API and the data directory.
  const api = (path: string, init?: RequestInit) => fetch(`${m[2]!}${path}`, init);
  const server = { api, dir } as unknown as TestTarget;
  await completeSetup(server);
  const session = await login(server, ADMIN.username, ADMIN.password);

  const created = await call(server, "POST", "/api/sites", {
    session,
    body: { name: "shop", hosts: ["shop.test"], upstreams: [up.url], mode: "block" },
  });
  assertEquals(created.status, 201);
  const site = await created.json();
  assertEquals(site.level, "balanced");

  const fine = await hostFetch(`${dataUrl}/products?id=42`, "shop.test");
  assertEquals(fine.status, 200);
  await fine.body?.cancel();
  const attack = await hostFetch(`${dataUrl}/products?id=1%27%20or%201=1--`, "shop.test");
  assertEquals(attack.status, 403);
  const trace = attack.headers.get("x-waf-trace-id")!;
  ok((await attack.text()).includes(trace));

  const found = await call(server, "GET", `/api/logs/${trace}`, { session });
  assertEquals(found.status, 200);
  const record = await found.json();
  assertEquals(record.trace_id, trace);
  assertEquals(record.site_id, site.id);
  assertEquals(record.action, "block");
  assertEquals(record.chain.at(-1).check, "engine");
  assertEquals(record.chain.at(-1).result, "block");
  assertEquals(record.finding.class, "sqli");
  assertEquals(await waf.stop(), 0);
});
