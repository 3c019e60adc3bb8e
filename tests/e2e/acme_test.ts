/**
 * ACME certificates against a real ACME server on loopback (Debian's `pebble` with
 * `pebble-challtestsrv` as its DNS, on free ports; ignored when pebble is absent,
 * unless WAF_REQUIRE_SERVICES=1): the WAF orders a certificate for a site's host names, pebble
 * validates HTTP-01 against the data plane's own port (answered before the protection checks: an
 * IP list blocks every loopback client meanwhile), the certificate is installed and served
 * by the HTTPS data plane at once (verified against pebble's root), the site shows its issuer,
 * names and expiry; the renewal task renews it (pebble issues 20-day certificates, inside the
 * 30-day window); a host that pebble cannot reach fails naming the host and the challenge, and
 * notifies.
 */
import tls from "node:tls";
import { X509Certificate } from "node:crypto";
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { ADMIN, callJson, completeSetup, login } from "../_helpers/identity.ts";
import { HAS_PEBBLE, startPebble } from "../_helpers/pebble.ts";
import { PEM_PRIVATE_KEY, storedSettings, storedSiteConfigs } from "../_helpers/sites.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { ignoreWithout } from "../_helpers/services.ts";

/** The certificate the HTTPS data plane presents for `servername`, verified against `ca`. */
function served(
  port: number,
  servername: string,
  ca: string,
): Promise<{ fingerprint: string; reply: string }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, servername, ca }, () => {
      const fingerprint = socket.getPeerCertificate().fingerprint256;
      let reply = "";
      socket.on("data", (d: Uint8Array) => reply += new TextDecoder().decode(d));
      socket.on("end", () => resolve({ fingerprint, reply }));
      socket.write(`GET /hello HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
    });
    socket.on("error", reject);
  });
}

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256;

Deno.test({
  name:
    "ACME: issue over HTTP-01 through the data plane, serve it by SNI, renew it, and report a failed validation (needs pebble)",
  ignore: ignoreWithout(HAS_PEBBLE),
}, async (t) => {
  await using up = startUpstream();
  await using s = await startTestServer({
    config: { server: { data: { https_listen: "127.0.0.1:0" } } },
  });
  const httpPort = Number(new URL(s.dataUrl).port);
  const httpsPort = Number(new URL(s.dataHttpsUrl!).port);
  await using pebble = await startPebble({ httpPort, validitySeconds: 20 * 86_400 });
  await completeSetup(s);
  const admin = await login(s, ADMIN.username, ADMIN.password);
  const site = await callJson(s, "POST", "/api/sites", {
    session: admin,
    body: { name: "shop", hosts: ["shop.test", "www.shop.test"], upstreams: [up.url] },
  });
  assertEquals(site.status, 201, JSON.stringify(site.body));
  const id = String((site.body.item as { id: string } | undefined)?.id ?? site.body.id);
  const order = (body: Record<string, unknown>) =>
    callJson(s, "POST", `/api/sites/${id}/certificate/acme`, { session: admin, body });
  let first = "";

  await t.step(
    "issue: pebble validates HTTP-01 on the data plane; HTTPS serves the chain",
    async () => {
      const r = await order({
        directory: pebble.directory,
        email: "ops@shop.test",
        directory_ca: pebble.ca,
      });
      assertEquals(r.status, 200, `${JSON.stringify(r.body)}\n${pebble.output()}`);
      const state = r.body.acme as Record<string, unknown>;
      assertEquals([state.status, state.names, state.last_error], [
        "valid",
        ["shop.test", "www.shop.test"],
        null,
      ]);
      assertMatch(String(state.issuer), /Pebble/);
      const view = await callJson(s, "GET", `/api/sites/${id}`, { session: admin });
      const cert = (view.body.item ?? view.body) as {
        tls: { cert: string; certificate: { issuer: string; names: string[]; not_after: string } };
      };
      assertMatch(cert.tls.certificate.issuer, /Pebble/);
      assertEquals(cert.tls.certificate.names, ["shop.test", "www.shop.test"]);
      assertEquals(cert.tls.certificate.not_after, state.not_after);
      ok(!JSON.stringify(view.body).includes("PRIVATE KEY"));
      const root = await pebble.root();
      for (const name of ["shop.test", "www.shop.test"]) {
        const got = await served(httpsPort, name, root);
        assertEquals(got.fingerprint, fingerprintOf(cert.tls.cert));
        assertMatch(got.reply, /^HTTP\/1\.1 200/);
      }
      first = cert.tls.cert;
      // The issued key is sealed in the store file, like an uploaded one.
      const [config] = storedSiteConfigs(`${s.dir}/waf.db`);
      ok(!PEM_PRIVATE_KEY.test(config!), "no PEM private key text in the sites table");
      const settings = storedSettings(`${s.dir}/waf.db`);
      ok(settings.some((v) => v.includes("key_sealed")), "the ACME account key, sealed");
      ok(!settings.some((v) => PEM_PRIVATE_KEY.test(v)), "nor in the settings table");
      assertEquals(
        Object.keys((JSON.parse(config!) as { tls: Record<string, string> }).tls).sort(),
        ["cert", "key_sealed"],
      );
      // The challenge answers are withdrawn once the order is done.
      assertEquals(s.dataPlane.acmeChallenges.size, 0);
      const got = await callJson(s, "GET", `/api/sites/${id}/certificate/acme`, { session: admin });
      assertEquals((got.body.acme as { status: string }).status, "valid");
      ok(!JSON.stringify(got.body).includes("PRIVATE KEY"));
    },
  );

  await t.step(
    "renew: the renewal task renews a certificate inside its 30-day window",
    async () => {
      const run = await callJson(s, "POST", "/api/ops/tasks/certificate-renewal/run", {
        session: admin,
        body: {},
      });
      ok(run.status === 200 || run.status === 202, JSON.stringify(run.body));
      while (s.ops.scheduler.isRunning("certificate-renewal")) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const last = s.ops.scheduler.runs("certificate-renewal", 1)[0]!;
      assertEquals(last.result, "ok", JSON.stringify(last));
      const view = await callJson(s, "GET", `/api/sites/${id}`, { session: admin });
      const pem = ((view.body.item ?? view.body) as { tls: { cert: string } }).tls.cert;
      ok(fingerprintOf(pem) !== fingerprintOf(first), "a new certificate");
      const got = await served(httpsPort, "shop.test", await pebble.root());
      assertEquals(got.fingerprint, fingerprintOf(pem));
      const audit = await callJson(s, "GET", "/api/audit?action=site.certificate.acme", {
        session: admin,
      });
      const items = audit.body.items as { result: string; detail: { trigger: string } }[];
      assertEquals(items.map((a) => [a.result, a.detail.trigger]), [
        ["success", "renewal"],
        ["success", "request"],
      ]);
    },
  );

  await t.step(
    "a host pebble cannot reach fails naming the host and the challenge, and notifies",
    async () => {
      await pebble.addA("bad.shop.test", "127.0.0.2");
      const other = await callJson(s, "POST", "/api/sites", {
        session: admin,
        body: { name: "bad", hosts: ["ok.shop.test", "bad.shop.test"], upstreams: [up.url] },
      });
      const badId = String((other.body.item as { id: string } | undefined)?.id ?? other.body.id);
      const r = await callJson(s, "POST", `/api/sites/${badId}/certificate/acme`, {
        session: admin,
        body: { directory: pebble.directory, directory_ca: pebble.ca },
      });
      assertEquals(r.status, 502, JSON.stringify(r.body));
      const error = r.body.error as { code: string; message: string };
      assertEquals(error.code, "ACME_VALIDATION_FAILED", error.message);
      assertMatch(error.message, /host "bad\.shop\.test" failed the http-01 challenge/);
      ok(!/host "ok\.shop\.test" failed/.test(error.message), error.message);
      const state = (await callJson(s, "GET", `/api/sites/${badId}/certificate/acme`, {
        session: admin,
      })).body.acme as { status: string; failures: { host: string; challenge: string }[] };
      assertEquals(state.status, "failed");
      assertEquals(state.failures.map((f) => [f.host, f.challenge]), [[
        "bad.shop.test",
        "http-01",
      ]]);
      const inbox = await callJson(s, "GET", "/api/notifications", { session: admin });
      const n = (inbox.body.items as { kind: string; body: string }[]).find((x) =>
        x.kind === "acme.failed"
      );
      ok(n && /bad\.shop\.test/.test(n.body), JSON.stringify(inbox.body));
      // The site keeps serving without a certificate; nothing was installed.
      const view = await callJson(s, "GET", `/api/sites/${badId}`, { session: admin });
      assertEquals(((view.body.item ?? view.body) as { tls: unknown }).tls, null);
    },
  );

  await t.step("refusals: a wildcard host, a plain-HTTP directory, a missing site", async () => {
    const wild = await callJson(s, "POST", "/api/sites", {
      session: admin,
      body: { name: "wild", hosts: ["*.wild.test"], upstreams: [up.url] },
    });
    const wildId = String((wild.body.item as { id: string } | undefined)?.id ?? wild.body.id);
    const r = await callJson(s, "POST", `/api/sites/${wildId}/certificate/acme`, {
      session: admin,
      body: { directory: pebble.directory },
    });
    assertEquals([r.status, (r.body.error as { code: string }).code], [
      400,
      "ACME_UNSUPPORTED_HOST",
    ]);
    const bad = await order({ directory: "http://insecure.test/dir" });
    assertEquals(bad.status, 400);
    const missing = await callJson(s, "POST", "/api/sites/nope/certificate/acme", {
      session: admin,
      body: {},
    });
    assertEquals(missing.status, 404);
  });
});
