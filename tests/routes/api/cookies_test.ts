/**
 * The console's cookies carry `Secure` whenever the browser reaches the console over TLS (issue
 * #37, item 12): the management listener's own TLS (`tls: auto`, `cert_file`/`key_file`), and a
 * TLS-terminating proxy in front of a plain listener, which `server.management.base_url` with an
 * `https://` address declares (`X-Forwarded-Proto` is not trusted: the management plane has no
 * trusted proxies). Plain HTTP without an https base URL gets no `Secure`.
 */
import { assertEquals } from "../../_helpers/assert.ts";
import {
  type ApiTarget,
  call,
  completeSetup,
  login,
  setCookies,
  setupToken,
} from "../../_helpers/identity.ts";
import { startTestServer, type TestServer } from "../../_helpers/server.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { createCa, createServerLeaf } from "../../../mod/tls/x509.ts";

const NAMES = ["waf_session", "waf_csrf"];

/** The management API over `client` (trusting the server's CA), as the API helpers want it. */
function over(server: TestServer, client?: Deno.HttpClient): ApiTarget {
  const base = server.managementUrl.replace("127.0.0.1", "localhost");
  return { dir: server.dir, api: (path, init) => fetch(`${base}${path}`, { ...init, client }) };
}

/** `Secure` on the setup cookie, the sign-in cookies and the sign-out's clearing cookies. */
async function secureFlags(target: ApiTarget, headers: Record<string, string> = {}) {
  const probe = await call(target, "POST", "/api/setup/probe", {
    headers: { "x-waf-setup-token": await setupToken(target), ...headers },
  });
  await probe.body?.cancel();
  const flags: Record<string, boolean> = {
    waf_setup: setCookies(probe).get("waf_setup")?.attrs["secure"] === "",
  };
  await completeSetup(target);
  const res = await call(target, "POST", "/api/auth/login", {
    body: { username: "admin", password: "Correct-Horse-9" },
    headers,
  });
  await res.body?.cancel();
  for (const name of NAMES) {
    flags[name] = setCookies(res).get(name)?.attrs["secure"] === "";
  }
  const session = await login(target, "admin", "Correct-Horse-9");
  const out = await call(target, "POST", "/api/auth/logout", { session, headers });
  await out.body?.cancel();
  for (const name of NAMES) {
    flags[`${name} (cleared)`] = setCookies(out).get(name)?.attrs["secure"] === "";
  }
  return flags;
}

const all = (value: boolean) =>
  Object.fromEntries(
    ["waf_setup", ...NAMES, ...NAMES.map((n) => `${n} (cleared)`)].map((n) => [n, value]),
  );

Deno.test("cookies are Secure when the management listener runs tls: auto", async () => {
  await using server = await startTestServer({
    config: { server: { management: { tls: "auto" } } },
  });
  const client = Deno.createHttpClient({
    caCerts: [await Deno.readTextFile(`${server.dir}/tls/ca.crt`)],
  });
  try {
    assertEquals(await secureFlags(over(server, client)), all(true));
  } finally {
    client.close();
  }
});

Deno.test("cookies are Secure when the management listener serves cert_file and key_file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "waf-cookie-tls-" });
  const now = Date.now();
  const ca = await createCa("test CA", now, systemRandom);
  const leaf = await createServerLeaf(ca, { names: ["localhost"], days: 30 }, now, systemRandom);
  await Deno.writeTextFile(`${dir}/server.crt`, leaf.cert);
  await Deno.writeTextFile(`${dir}/server.key`, leaf.key);
  await using server = await startTestServer({
    config: {
      server: {
        management: { tls: { cert_file: `${dir}/server.crt`, key_file: `${dir}/server.key` } },
      },
    },
  });
  const client = Deno.createHttpClient({ caCerts: [ca.cert] });
  try {
    assertEquals(await secureFlags(over(server, client)), all(true));
  } finally {
    client.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("behind a TLS-terminating proxy an https base_url makes the cookies Secure", async () => {
  await using server = await startTestServer({
    config: { server: { management: { base_url: "https://waf.example.test" } } },
  });
  assertEquals(server.managementUrl.startsWith("http://"), true, "a plain listener");
  assertEquals(await secureFlags(over(server), { "x-forwarded-proto": "https" }), all(true));
});

Deno.test("plain HTTP without an https base_url sets no Secure, whatever X-Forwarded-Proto says", async () => {
  await using server = await startTestServer();
  assertEquals(await secureFlags(over(server), { "x-forwarded-proto": "https" }), all(false));
});
