/**
 * JWT authentication at the proxy on a running server: real tokens signed with jose (HS256,
 * RS256, ES256, EdDSA), a JWKS served by a loopback HTTP server that rotates its keys and goes
 * down, expired and not-yet-valid tokens, wrong audience and issuer, `alg: none`, and an HMAC
 * token signed with the RSA public key (algorithm confusion). Settings go through the API and
 * apply to the next request.
 */
import { exportJWK, exportSPKI, generateKeyPair, type JWK, SignJWT, UnsecuredJWT } from "jose";
import { waitFor } from "../_helpers/wait.ts";
import { assertEquals, ok } from "../_helpers/assert.ts";
import { addSite, apiFor, hit, steps } from "../_helpers/protection.ts";
import { startTestServer, type TestServer } from "../_helpers/server.ts";
import { startSntpServer } from "../_helpers/sntp_server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const SECRET = "a-shared-secret-of-32-characters!";
const ROUTES = [{ id: "api", method: "*", path_pattern: "^/api/" }];

type Alg = "RS256" | "ES256" | "EdDSA";
interface Pair {
  readonly alg: Alg;
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
  readonly spki: string;
}

async function pair(alg: Alg, kid: string): Promise<Pair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...await exportJWK(publicKey), kid, alg, use: "sig" };
  return { alg, kid, privateKey, jwk, spki: await exportSPKI(publicKey) };
}

interface Claims {
  iss?: string;
  aud?: string;
  /** Seconds relative to the server's clock. */
  exp?: number;
  nbf?: number;
}

function sign(
  s: TestServer,
  key: CryptoKey | Uint8Array,
  header: { alg: string; kid?: string },
  c: Claims = {},
): Promise<string> {
  const now = Math.floor(s.clock.now() / 1000);
  const jwt = new SignJWT({ sub: "client-1" }).setProtectedHeader(header)
    .setIssuedAt(now).setIssuer(c.iss ?? "https://issuer.test")
    .setAudience(c.aud ?? "orders").setExpirationTime(now + (c.exp ?? 600));
  if (c.nbf !== undefined) jwt.setNotBefore(now + c.nbf);
  return jwt.sign(key);
}

const bearer = (token: string) => ({ init: { headers: { authorization: `Bearer ${token}` } } });

/** A loopback JWKS endpoint whose key set the test replaces; counts fetches. */
function startJwksServer(initial: JWK[]) {
  let keys = initial;
  let fetches = 0;
  const ac = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {}, signal: ac.signal },
    () => {
      fetches++;
      return Response.json({ keys });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}/.well-known/jwks.json`,
    set(next: JWK[]) {
      keys = next;
    },
    get fetches() {
      return fetches;
    },
    async stop() {
      ac.abort();
      await server.finished;
    },
  };
}

Deno.test("HS256 with a shared secret: a missing, expired, not-yet-valid, wrong-audience, wrong-issuer or unsigned token gets 401 with WWW-Authenticate and the trace id", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const put = await api("PUT", "/api/apisec/config", {
    auth: {
      enabled: true,
      algorithms: ["HS256"],
      secret: SECRET,
      issuer: "https://issuer.test",
      audience: "orders",
      clock_skew: "30s",
      routes: ROUTES,
    },
  });
  assertEquals(put.status, 200);
  const view = await put.json();
  assertEquals(view.auth.secret_set, true);
  ok(!JSON.stringify(view).includes(SECRET), "the secret is never read back");
  const stored = s.db.prepare("SELECT config FROM policy_objects WHERE kind = 'apisec_config'")
    .get() as { config: string };
  ok(!stored.config.includes(SECRET), "the secret is sealed at rest");

  const key = new TextEncoder().encode(SECRET);
  const missing = await hit(s, "/api/orders", {
    init: { headers: { accept: "application/json" } },
  });
  assertEquals(missing.status, 401);
  assertEquals(missing.headers.get("www-authenticate"), 'Bearer realm="api"');
  assertEquals(JSON.parse(missing.body), {
    code: "TOKEN_REQUIRED",
    message: "This API needs a bearer token in the Authorization header.",
    traceId: missing.traceId,
  });
  assertEquals(steps(missing).at(-1), "api_auth:missing:api");
  assertEquals(missing.action, "block");
  assertEquals((await hit(s, "/public")).status, 200);

  const good = await hit(s, "/api/orders", bearer(await sign(s, key, { alg: "HS256" })));
  assertEquals(good.status, 200);
  assertEquals(steps(good).at(-1), "upstream:200");
  ok(steps(good).includes("api_auth:pass:api"));

  const cases: Array<[string, Promise<string>]> = [
    ["expired", sign(s, key, { alg: "HS256" }, { exp: -60 })],
    ["not_yet_valid", sign(s, key, { alg: "HS256" }, { nbf: 120 })],
    ["bad_audience", sign(s, key, { alg: "HS256" }, { aud: "billing" })],
    ["bad_issuer", sign(s, key, { alg: "HS256" }, { iss: "https://evil.test" })],
    ["bad_signature", sign(s, new TextEncoder().encode("x".repeat(32)), { alg: "HS256" })],
    ["algorithm_not_allowed", Promise.resolve(new UnsecuredJWT({ sub: "x" }).encode())],
  ];
  for (const [reason, token] of cases) {
    const h = await hit(s, "/api/orders", bearer(await token));
    assertEquals(h.status, 401, reason);
    assertEquals(
      h.headers.get("www-authenticate"),
      `Bearer realm="api", error="invalid_token", error_description="${reason}"`,
    );
    assertEquals(steps(h).at(-1), `api_auth:${reason}:api`);
    ok(h.body.includes(h.traceId), "the 401 page shows the trace id");
  }
  // Within the clock skew an expired token still passes.
  assertEquals(
    (await hit(s, "/api/orders", bearer(await sign(s, key, { alg: "HS256" }, { exp: -10 }))))
      .status,
    200,
  );
  // Switching auth off through the API applies to the next request; the secret stays stored.
  const off = await api("PUT", "/api/apisec/config", { auth: { ...view.auth, enabled: false } });
  assertEquals((await off.json()).auth.secret_set, true);
  assertEquals((await hit(s, "/api/orders")).status, 200);
});

Deno.test("a token without exp gets 401 missing_exp unless auth.require_exp is false", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const auth = { enabled: true, algorithms: ["HS256"], secret: SECRET, routes: ROUTES };
  const put = await api("PUT", "/api/apisec/config", { auth });
  assertEquals(put.status, 200);
  assertEquals((await put.json()).auth.require_exp, true, "the default");
  const key = new TextEncoder().encode(SECRET);
  const forever = await new SignJWT({ sub: "client-1" }).setProtectedHeader({ alg: "HS256" })
    .setIssuedAt(Math.floor(s.clock.now() / 1000)).sign(key);
  const refused = await hit(s, "/api/orders", bearer(forever));
  assertEquals(refused.status, 401);
  assertEquals(
    refused.headers.get("www-authenticate"),
    'Bearer realm="api", error="invalid_token", error_description="missing_exp"',
  );
  assertEquals(steps(refused).at(-1), "api_auth:missing_exp:api");
  const bad = await api("PUT", "/api/apisec/config", { auth: { ...auth, require_exp: "no" } });
  assertEquals(bad.status, 400);
  assertEquals((await bad.json()).error.field, "auth.require_exp");
  const lenient = await api("PUT", "/api/apisec/config", { auth: { ...auth, require_exp: false } });
  assertEquals(lenient.status, 200);
  assertEquals((await lenient.json()).auth.require_exp, false);
  assertEquals((await hit(s, "/api/orders", bearer(forever))).status, 200);
});

Deno.test("RS256, ES256 and EdDSA tokens against a rotating remote JWKS: an unknown kid refreshes at most once per gap, a JWKS that goes down keeps the last good keys, the cache file is written", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const rsa = await pair("RS256", "r1");
  const ec = await pair("ES256", "e1");
  const ed = await pair("EdDSA", "d1");
  const jwks = startJwksServer([rsa.jwk, ec.jwk, ed.jwk]);
  const cacheFile = `${s.dir}/jwks-cache.json`;
  const api = apiFor(s);
  const auth = {
    enabled: true,
    algorithms: ["RS256", "ES256", "EdDSA", "HS256"],
    secret: SECRET,
    audience: ["orders"],
    jwks_url: jwks.url,
    jwks_cache_file: cacheFile,
    jwks_refresh_interval: "5m",
    routes: ROUTES,
  };
  assertEquals((await api("PUT", "/api/apisec/config", { auth })).status, 200);
  for (const p of [rsa, ec, ed]) {
    const h = await hit(
      s,
      "/api/x",
      bearer(await sign(s, p.privateKey, { alg: p.alg, kid: p.kid })),
    );
    assertEquals(h.status, 200, p.alg);
  }
  assertEquals(jwks.fetches, 1);
  ok((await Deno.readTextFile(cacheFile)).includes('"kid":"r1"'));

  // Algorithm confusion: an HS256 token whose HMAC key is the RSA public key never verifies.
  const confused = await sign(s, new TextEncoder().encode(rsa.spki), { alg: "HS256", kid: "r1" });
  const conf = await hit(s, "/api/x", bearer(confused));
  assertEquals([conf.status, steps(conf).at(-1)], [401, "api_auth:bad_signature:api"]);

  // Rotation: the issuer adds r2; a token with the new kid triggers one refresh and passes.
  const rsa2 = await pair("RS256", "r2");
  jwks.set([rsa2.jwk]);
  const t2 = await sign(s, rsa2.privateKey, { alg: "RS256", kid: "r2" });
  assertEquals((await hit(s, "/api/x", bearer(t2))).status, 200);
  assertEquals(jwks.fetches, 2);
  // An unknown kid right after: no further fetch (rate-limited), 401 unknown_key.
  const stray = await pair("RS256", "zz");
  const tz = await sign(s, stray.privateKey, { alg: "RS256", kid: "zz" });
  const unknown = await hit(s, "/api/x", bearer(tz));
  assertEquals([unknown.status, steps(unknown).at(-1)], [401, "api_auth:unknown_key:api"]);
  assertEquals(jwks.fetches, 2);
  s.clock.advance(31_000);
  await hit(s, "/api/x", bearer(tz));
  await hit(s, "/api/x", bearer(tz));
  assertEquals(jwks.fetches, 3, "one refresh per gap for unknown key ids");

  // The JWKS goes down: past the refresh interval the refresh fails, the last good keys serve.
  await jwks.stop();
  s.clock.advance(6 * 60_000);
  const t2b = await sign(s, rsa2.privateKey, { alg: "RS256", kid: "r2" });
  assertEquals((await hit(s, "/api/x", bearer(t2b))).status, 200);
  // The refresh runs in the background: waited for (up to 20 s under load), not 1 s.
  await waitFor(() => s.logs.some((l) => l.includes("JWKS refresh failed")), "the failed refresh");
  ok(s.logs.some((l) => l.includes("JWKS refresh failed")), "the failed refresh is logged");
  assertEquals((await hit(s, "/api/x", bearer(t2b))).status, 200);
});

Deno.test("inline PEM and local JWKS file key sources verify tokens; a bad auth block is refused naming its field", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const ec = await pair("ES256", "e9");
  const ed = await pair("EdDSA", "d9");
  const jwksFile = `${s.dir}/keys.json`;
  await Deno.writeTextFile(jwksFile, JSON.stringify({ keys: [ed.jwk] }));
  const api = apiFor(s);
  const base = { enabled: true, routes: ROUTES, algorithms: ["ES256", "EdDSA"] };
  assertEquals(
    (await api("PUT", "/api/apisec/config", {
      auth: { ...base, pem: ec.spki, jwks_file: jwksFile },
    }))
      .status,
    200,
  );
  assertEquals(
    (await hit(s, "/api/a", bearer(await sign(s, ec.privateKey, { alg: "ES256" })))).status,
    200,
  );
  assertEquals(
    (await hit(s, "/api/a", bearer(await sign(s, ed.privateKey, { alg: "EdDSA", kid: "d9" }))))
      .status,
    200,
  );
  const field = async (auth: Record<string, unknown>) => {
    const r = await api("PUT", "/api/apisec/config", { auth });
    assertEquals(r.status, 400, JSON.stringify(auth));
    return (await r.json()).error.field;
  };
  assertEquals(await field({ ...base, algorithms: ["HS256"] }), "auth.secret");
  assertEquals(await field({ ...base }), "auth.algorithms");
  assertEquals(await field({ ...base, algorithms: ["none"], pem: ec.spki }), "auth.algorithms[0]");
  assertEquals(await field({ ...base, pem_file: `${s.dir}/missing.pem` }), "auth.pem_file");
  assertEquals(await field({ ...base, jwks_url: "ftp://x" }), "auth.jwks_url");
});

Deno.test("an auth block in waf.yaml seeds the store with its secret sealed, and protects routes from the start", async () => {
  await using up = startUpstream();
  await using s = await startTestServer({
    config: {
      apisec: { auth: { enabled: true, algorithms: ["HS256"], secret: SECRET, routes: ROUTES } },
    },
  });
  addSite(s, up.url);
  assertEquals((await hit(s, "/api/a")).status, 401);
  const token = await sign(s, new TextEncoder().encode(SECRET), { alg: "HS256" });
  assertEquals((await hit(s, "/api/a", bearer(token))).status, 200);
  const stored = s.db.prepare("SELECT config FROM policy_objects WHERE kind = 'apisec_config'")
    .get() as { config: string };
  ok(!stored.config.includes(SECRET));
});

Deno.test("with time.apply_offset, exp and nbf are judged on the synchronised clock", async () => {
  await using up = startUpstream();
  // The time server is an hour ahead of this host.
  await using sntp = await startSntpServer(3_600_000);
  await using s = await startTestServer({
    config: { time: { servers: [sntp.address], apply_offset: true, sync_interval: "0s" } },
  });
  addSite(s, up.url);
  const put = await apiFor(s)("PUT", "/api/apisec/config", {
    auth: { enabled: true, algorithms: ["HS256"], secret: SECRET, routes: ROUTES },
  });
  assertEquals(put.status, 200);
  const key = new TextEncoder().encode(SECRET);
  // Valid from 30 minutes on the host's clock, and for two hours.
  const early = await sign(s, key, { alg: "HS256" }, { nbf: 1800, exp: 7200 });
  // Expired 30 minutes from now on the host's clock.
  const soon = await sign(s, key, { alg: "HS256" }, { exp: 1800 });
  assertEquals((await hit(s, "/api/orders", bearer(early))).status, 401);
  assertEquals((await hit(s, "/api/orders", bearer(soon))).status, 200);

  const v = await s.monitor.timeSync.sync();
  ok(Math.abs(v.applied_offset_ms - 3_600_000) < 60_000, JSON.stringify(v));
  assertEquals((await hit(s, "/api/orders", bearer(early))).status, 200);
  const expired = await hit(s, "/api/orders", bearer(soon));
  assertEquals(expired.status, 401);
  assertEquals(steps(expired).at(-1), "api_auth:expired:api");
});
