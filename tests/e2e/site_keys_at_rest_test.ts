/**
 * Site private keys are sealed at rest: the SQLite file itself (opened directly, not through the
 * WAF) holds no PEM private key for a certificate uploaded through the sites API, while HTTPS
 * serves that certificate; the key is in no API answer, audit record or log line; a row an older
 * build stored with its key in plain text is still served and is sealed when the WAF starts. (The
 * ACME-issued case is in `acme_test.ts`.)
 */
import tls from "node:tls";
import { DatabaseSync } from "node:sqlite";
import { X509Certificate } from "node:crypto";
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { ADMIN, callJson, completeSetup, login } from "../_helpers/identity.ts";
import { startTestServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { openStore } from "../../db/store.ts";
import { PEM_PRIVATE_KEY, storedSiteConfigs } from "../_helpers/sites.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { createCa, createLeaf } from "../../mod/tls/x509.ts";

/** The fingerprint of the certificate HTTPS presents for `servername`, verified against `ca`. */
function servedFingerprint(port: number, servername: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, servername, ca }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on("error", reject);
  });
}

async function pki(host: string) {
  const now = Date.now();
  const ca = await createCa("waf test CA", now, systemRandom);
  const leaf = await createLeaf(ca, { commonName: host, dnsNames: [host] }, now, systemRandom);
  return { ca, leaf };
}

const HTTPS = { server: { data: { https_listen: "127.0.0.1:0" } } };

Deno.test("an uploaded site key is sealed in the SQLite file, served over HTTPS, and never shown", async () => {
  const { ca, leaf } = await pki("shop.test");
  await using up = startUpstream();
  await using s = await startTestServer({ config: HTTPS });
  await completeSetup(s);
  const admin = await login(s, ADMIN.username, ADMIN.password);
  const created = await callJson(s, "POST", "/api/sites", {
    session: admin,
    body: { name: "shop", hosts: ["shop.test"], upstreams: [up.url], tls: leaf },
  });
  assertEquals(created.status, 201, JSON.stringify(created.body));

  const [config] = storedSiteConfigs(`${s.dir}/waf.db`);
  ok(config !== undefined);
  ok(!PEM_PRIVATE_KEY.test(config), "no PEM private key text in the row");
  ok(!config.includes(leaf.key.split("\n")[1]!), "no line of the key either");
  const tlsStored = (JSON.parse(config) as { tls: Record<string, string> }).tls;
  assertEquals(Object.keys(tlsStored).sort(), ["cert", "key_sealed"]);
  assertMatch(tlsStored["key_sealed"]!, /^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  assertEquals(tlsStored["cert"], leaf.cert, "the certificate itself is public");

  const port = Number(new URL(s.dataHttpsUrl!).port);
  assertEquals(
    await servedFingerprint(port, "shop.test", ca.cert),
    new X509Certificate(leaf.cert).fingerprint256,
  );

  // Changing the site without resending the key keeps (and re-seals) the stored one.
  const id = (created.body.item as { id: string } | undefined)?.id ?? String(created.body.id);
  const changed = await callJson(s, "PUT", `/api/sites/${id}`, {
    session: admin,
    body: {
      name: "shop",
      hosts: ["shop.test"],
      upstreams: [up.url],
      level: "strict",
      tls: { cert: leaf.cert },
    },
  });
  assertEquals(changed.status, 200, JSON.stringify(changed.body));
  ok(!PEM_PRIVATE_KEY.test(storedSiteConfigs(`${s.dir}/waf.db`)[0]!));
  assertEquals(
    await servedFingerprint(port, "shop.test", ca.cert),
    new X509Certificate(leaf.cert).fingerprint256,
  );

  // A refused pair (another key) echoes neither key in the answer, the audit trail or the log.
  const { leaf: stranger } = await pki("shop.test");
  const refused = await callJson(s, "PUT", `/api/sites/${id}`, {
    session: admin,
    body: {
      name: "shop",
      hosts: ["shop.test"],
      upstreams: [up.url],
      tls: { cert: leaf.cert, key: stranger.key },
    },
  });
  assertEquals(refused.status, 400, JSON.stringify(refused.body));

  const answers = [
    created.body,
    changed.body,
    refused.body,
    (await callJson(s, "GET", `/api/sites/${id}`, { session: admin })).body,
    (await callJson(s, "GET", "/api/sites", { session: admin })).body,
    (await callJson(s, "GET", "/api/audit?limit=100", { session: admin })).body,
  ];
  for (const body of answers) ok(!JSON.stringify(body).includes("PRIVATE KEY"));
  ok(!s.logs.some((l) => l.includes("PRIVATE KEY")), "no key in the logs");
});

Deno.test("a key an older build stored in plain text is still served, and sealed at start", async () => {
  const { ca, leaf } = await pki("old.test");
  await using up = startUpstream();
  await using dir = await tempDir("waf-legacy-key-");
  const now = Date.now();
  const store = openStore(`${dir}/waf.db`, { now });
  store.prepare(
    "INSERT INTO sites (id, name, config, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
  ).run(
    "0123456789abcdef01234567",
    "old",
    JSON.stringify({ hosts: ["old.test"], upstreams: [up.url], tls: leaf }),
    now,
    now,
  );
  store.close();
  ok(PEM_PRIVATE_KEY.test(storedSiteConfigs(`${dir}/waf.db`)[0]!), "the legacy row");

  await using s = await startTestServer({ config: HTTPS, dir: String(dir) });
  const [config] = storedSiteConfigs(`${dir}/waf.db`);
  ok(!PEM_PRIVATE_KEY.test(config!), "sealed when the WAF started");
  const stored = JSON.parse(config!) as { tls: Record<string, string> };
  assertEquals(Object.keys(stored.tls).sort(), ["cert", "key_sealed"]);
  const row = new DatabaseSync(`${dir}/waf.db`, { readOnly: true });
  const times = row.prepare("SELECT updated_at FROM sites").get() as { updated_at: number };
  row.close();
  assertEquals(times.updated_at, now, "sealing does not count as a change of the site");

  const port = Number(new URL(s.dataHttpsUrl!).port);
  assertEquals(
    await servedFingerprint(port, "old.test", ca.cert),
    new X509Certificate(leaf.cert).fingerprint256,
  );
  ok(!s.logs.some((l) => l.includes("PRIVATE KEY")));
});
