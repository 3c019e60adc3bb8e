/**
 * How a node talks to its controller's cluster listener. Before joining it knows nothing but the
 * CA pin inside its join token: it reads the CA certificate without verification, keeps it only
 * if its SHA-256 equals the pin, and from then on verifies the controller against that CA (the
 * token itself is sent only over a verified connection). After joining, every call presents the
 * node's client certificate (mTLS).
 */
import https from "node:https";
import { AppError } from "../core/errors.ts";
import { certificateFacts } from "../tls/x509.ts";

const TIMEOUT_MS = 10_000;

/** A controller's answer: its status and JSON body (`{}` when there is none). */
export interface ControllerAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** Reads the controller's CA certificate and checks it against `pin` (hex SHA-256). */
export async function fetchPinnedCa(controllerUrl: string, pin: string): Promise<string> {
  const url = new URL("/api/cluster/ca", controllerUrl);
  const text = await new Promise<string>((resolve, reject) => {
    const req = https.get(url, { rejectUnauthorized: false, timeout: TIMEOUT_MS }, (res) => {
      let data = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        data += chunk;
        if (data.length > 65_536) req.destroy(new Error("answer too large"));
      });
      res.on("end", () => resolve(data));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
  });
  let pem: unknown;
  try {
    pem = (JSON.parse(text) as { ca_certificate?: unknown }).ca_certificate;
  } catch {
    pem = undefined;
  }
  const facts = typeof pem === "string" ? await certificateFacts(pem) : undefined;
  if (!facts || facts.fingerprint !== pin) {
    throw new AppError(
      502,
      "CLUSTER_CA_MISMATCH",
      `The controller at ${url.origin} does not present the CA the join token names`,
    );
  }
  return pem as string;
}

/** A connection to the controller verified against `caCert`, presenting `identity` if given. */
export class ControllerClient {
  readonly #client: Deno.HttpClient;
  readonly #base: string;

  constructor(
    controllerUrl: string,
    caCert: string,
    identity?: { readonly cert: string; readonly key: string },
  ) {
    this.#base = controllerUrl.replace(/\/$/, "");
    this.#client = Deno.createHttpClient({
      caCerts: [caCert],
      ...(identity ? { cert: identity.cert, key: identity.key } : {}),
    });
  }

  /**
   * Sends a JSON request; network failures (and `signal` aborting) reject, HTTP failures resolve
   * with their status.
   */
  async request(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
    options: { readonly timeoutMs?: number; readonly signal?: AbortSignal } = {},
  ): Promise<ControllerAnswer> {
    const timeout = AbortSignal.timeout(options.timeoutMs ?? TIMEOUT_MS);
    const res = await fetch(`${this.#base}${path}`, {
      method,
      client: this.#client,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: options.signal ? AbortSignal.any([timeout, options.signal]) : timeout,
    });
    const text = await res.text();
    let parsed: unknown = {};
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = {};
    }
    const obj = parsed && typeof parsed === "object" ? parsed as Record<string, unknown> : {};
    return { status: res.status, body: obj };
  }

  close(): void {
    this.#client.close();
  }
}
