/**
 * A real ACME server on loopback for tests: Debian's `pebble` (RFC 8555 test CA) with
 * `pebble-challtestsrv` as its DNS, every listener on a free port (never a fixed one). Host
 * names resolve to 127.0.0.1 unless `addA` says otherwise; pebble validates HTTP-01 on
 * `httpPort` (the data plane's port). A test that needs it is ignored while pebble is absent
 * (`ignore: ignoreWithout(HAS_PEBBLE)`), unless WAF_REQUIRE_SERVICES=1, where `startPebble` fails the test.
 */
import { exists, missing, probe } from "./services.ts";

export const PEBBLE = "/usr/bin/pebble";
const CHALLTESTSRV = "/usr/bin/pebble-challtestsrv";

/** Whether pebble and its DNS are installed (probed once, when the test module loads). */
export const HAS_PEBBLE = await probe(
  "pebble",
  async () => await exists(PEBBLE) && await exists(CHALLTESTSRV),
);

export interface Pebble extends AsyncDisposable {
  /** The directory URL (HTTPS with `ca`). */
  readonly directory: string;
  /** The CA of pebble's own HTTPS listener (the trust anchor to reach the directory). */
  readonly ca: string;
  /** The root that issued the certificates (pebble makes a new one at every start). */
  root(): Promise<string>;
  /** Makes `host` resolve to `address` (A record) in pebble's DNS. */
  addA(host: string, address: string): Promise<void>;
  /** Everything pebble printed (for failure messages). */
  output(): string;
}

/** A port free now (bound and released); the child binds it a moment later. */
function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

function spawn(cmd: string, args: string[], env: Record<string, string> = {}) {
  const child = new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" }).spawn();
  let text = "";
  const pump = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s.pipeThrough(new TextDecoderStream())) text += chunk;
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  return {
    output: () => text,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      await child.status;
      await pumps.catch(() => {});
    },
  };
}

async function openssl(args: string, cwd: string): Promise<void> {
  const out = await new Deno.Command("openssl", {
    args: args.split(" "),
    cwd,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`openssl ${args}: ${new TextDecoder().decode(out.stderr)}`);
}

async function waitUntil(check: () => Promise<boolean>, what: string, ms = 15_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export async function startPebble(
  options: { httpPort: number; validitySeconds?: number },
): Promise<Pebble> {
  if (!HAS_PEBBLE) throw missing(`${PEBBLE} is not installed (apt-get install pebble)`);
  const dir = await Deno.makeTempDir({ prefix: "waf-pebble-" });
  // A CA and a leaf for 127.0.0.1 (a self-signed CA certificate is refused as a server's own).
  await openssl(
    "req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=pebble-test-ca -days 2 -keyout ca.key -out ca.pem",
    dir,
  );
  await openssl(
    "req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=pebble -keyout key.pem -out leaf.csr",
    dir,
  );
  await Deno.writeTextFile(`${dir}/ext.cnf`, "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  await openssl(
    "x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile ext.cnf -out cert.pem",
    dir,
  );
  const [dns, challMgmt, wfe, mgmt, tlsPort] = [
    freePort(),
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ];
  const chall = spawn(CHALLTESTSRV, [
    "-defaultIPv4",
    "127.0.0.1",
    "-defaultIPv6",
    "",
    "-dns01",
    `127.0.0.1:${dns}`,
    "-http01",
    "",
    "-https01",
    "",
    "-tlsalpn01",
    "",
    "-management",
    `127.0.0.1:${challMgmt}`,
  ]);
  await Deno.writeTextFile(
    `${dir}/pebble.json`,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${wfe}`,
        managementListenAddress: `127.0.0.1:${mgmt}`,
        certificate: `${dir}/cert.pem`,
        privateKey: `${dir}/key.pem`,
        httpPort: options.httpPort,
        tlsPort,
        ocspResponderURL: "",
        externalAccountBindingRequired: false,
        ...(options.validitySeconds ? { certificateValidityPeriod: options.validitySeconds } : {}),
      },
    }),
  );
  const pebble = spawn(
    PEBBLE,
    ["-config", `${dir}/pebble.json`, "-dnsserver", `127.0.0.1:${dns}`],
    {
      PEBBLE_VA_NOSLEEP: "1",
      PEBBLE_WFE_NONCEREJECT: "0",
      PEBBLE_AUTHZREUSE: "0",
    },
  );
  const ca = await Deno.readTextFile(`${dir}/ca.pem`);
  const client = Deno.createHttpClient({ caCerts: [ca] });
  const stopAll = async () => {
    client.close();
    await pebble.stop();
    await chall.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const directory = `https://127.0.0.1:${wfe}/dir`;
  try {
    await waitUntil(async () => {
      const r = await fetch(directory, { client });
      await r.body?.cancel();
      return r.ok;
    }, "pebble's directory").catch((err) => {
      throw new Error(`${(err as Error).message}: ${pebble.output()}`);
    });
    await waitUntil(async () => {
      const r = await fetch(`http://127.0.0.1:${challMgmt}/`, {});
      await r.body?.cancel();
      return true;
    }, "pebble-challtestsrv");
  } catch (err) {
    await stopAll();
    throw err;
  }
  return {
    directory,
    ca,
    async root() {
      const r = await fetch(`https://127.0.0.1:${mgmt}/roots/0`, { client });
      return await r.text();
    },
    async addA(host, address) {
      const r = await fetch(`http://127.0.0.1:${challMgmt}/add-a`, {
        method: "POST",
        body: JSON.stringify({ host: `${host}.`, addresses: [address] }),
      });
      await r.body?.cancel();
      if (!r.ok) throw new Error(`add-a: ${r.status}`);
    },
    output: () => pebble.output(),
    [Symbol.asyncDispose]: stopAll,
  };
}
