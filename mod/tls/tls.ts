/**
 * Resolves the management listener's TLS setting: `off`, `auto` (a local CA and a server
 * certificate generated into `<data>/tls/`, private keys mode 0600, renewed before expiry), or
 * explicit PEM files.
 */
import type { Config } from "../config/config.ts";
import { AppError } from "../core/errors.ts";
import type { Random } from "../core/random.ts";
import { certificateExpiry, createCa, createServerLeaf, type Pem } from "./x509.ts";

const RENEW_BEFORE_MS = 30 * 86_400_000;

async function readPem(dir: string, name: string): Promise<Pem | undefined> {
  try {
    return {
      cert: await Deno.readTextFile(`${dir}/${name}.crt`),
      key: await Deno.readTextFile(`${dir}/${name}.key`),
    };
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}

async function writePem(dir: string, name: string, pem: Pem): Promise<void> {
  await Deno.writeTextFile(`${dir}/${name}.crt`, pem.cert, { mode: 0o644 });
  await Deno.writeTextFile(`${dir}/${name}.key`, pem.key, { mode: 0o600 });
  await Deno.chmod(`${dir}/${name}.key`, 0o600);
}

/** Loads or creates the auto-TLS CA and server certificate for `hostnames`. */
export async function ensureAutoTls(
  dataDir: string,
  hostnames: readonly string[],
  now: number,
  random: Random,
): Promise<Pem & { caCert: string }> {
  const dir = `${dataDir}/tls`;
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  let ca = await readPem(dir, "ca");
  if (!ca || certificateExpiry(ca.cert) - now < RENEW_BEFORE_MS) {
    ca = await createCa("waf local CA", now, random);
    await writePem(dir, "ca", ca);
  }
  let server = await readPem(dir, "server");
  if (!server || certificateExpiry(server.cert) - now < RENEW_BEFORE_MS) {
    server = await createServerLeaf(ca, { names: hostnames, days: 397 }, now, random);
    await writePem(dir, "server", server);
  }
  return { ...server, caCert: ca.cert };
}

export interface ManagementTlsOptions {
  readonly config: Config;
  readonly dataDir: string;
  /** The management listener's host, named in an `auto` certificate unless it is a wildcard. */
  readonly listenHost: string;
  readonly now: number;
  readonly random: Random;
}

/** The certificate and key the management listener serves, or undefined for plain HTTP. */
export async function managementTls(options: ManagementTlsOptions): Promise<Pem | undefined> {
  const { config, dataDir, listenHost, now, random } = options;
  const tls = config.server.management.tls;
  if (tls === "off") return undefined;
  if (tls === "auto") {
    const names = new Set(["localhost", "127.0.0.1", "::1"]);
    if (listenHost !== "0.0.0.0" && listenHost !== "::") names.add(listenHost);
    return await ensureAutoTls(dataDir, [...names], now, random);
  }
  try {
    return {
      cert: await Deno.readTextFile(tls.cert_file),
      key: await Deno.readTextFile(tls.key_file),
    };
  } catch (err) {
    throw new AppError(
      500,
      "CONFIG_INVALID",
      `server.management.tls: cannot read "${tls.cert_file}" or "${tls.key_file}"`,
      { cause: err },
    );
  }
}
