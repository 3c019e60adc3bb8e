/**
 * A node's identity, kept in its own data directory (`<data>/cluster/`): the private key it
 * generated (`node.key`, mode 0600, never sent anywhere), the certificate the controller signed,
 * the cluster CA and `node.json` (id, name, controller). Joining builds it from a join token.
 */
import type { Config, ConfigProblem } from "../config/config.ts";
import { AppError } from "../core/errors.ts";
import { createCsr } from "../tls/x509.ts";
import { writePrivate } from "./cluster_ca.ts";
import { ControllerClient, fetchPinnedCa } from "./controller_client.ts";
import { parseJoinToken } from "./join_tokens.ts";

export interface NodeIdentity {
  readonly nodeId: string;
  readonly name: string;
  readonly controllerUrl: string;
  readonly cert: string;
  readonly key: string;
  readonly caCert: string;
}

const dirOf = (dataDir: string) => `${dataDir}/cluster`;

/**
 * Finishes a renewal interrupted between writing the new key and certificate and moving them in
 * place (both `.next` files are complete before the first move).
 */
async function finishRenewal(dir: string): Promise<void> {
  try {
    await Deno.stat(`${dir}/node.crt.next`);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return;
    throw err;
  }
  await Deno.rename(`${dir}/node.key.next`, `${dir}/node.key`).catch((err) => {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  });
  await Deno.rename(`${dir}/node.crt.next`, `${dir}/node.crt`);
}

/**
 * Replaces the node's key and certificate with renewed ones: both written beside the old ones,
 * then moved in place (an interruption is finished by the next load).
 */
export async function saveRenewedCertificate(
  dataDir: string,
  renewed: { readonly key: string; readonly cert: string },
): Promise<void> {
  const dir = dirOf(dataDir);
  await writePrivate(`${dir}/node.key.next`, renewed.key);
  // node.crt.next appears whole (a rename), and only once the key is written.
  await Deno.writeTextFile(`${dir}/node.crt.tmp`, renewed.cert, { mode: 0o644 });
  await Deno.rename(`${dir}/node.crt.tmp`, `${dir}/node.crt.next`);
  await finishRenewal(dir);
}

/**
 * A node that has neither joined (no identity in `dataDir`) nor a join token could never take
 * the controller's policy: a configuration mistake that stops start-up (and `waf config check`).
 * `joinToken` is the one from `--join-token` or WAF_CLUSTER_JOIN_TOKEN.
 */
export async function nodeJoinProblem(
  config: Config,
  dataDir: string,
  joinToken: string | undefined,
): Promise<ConfigProblem | undefined> {
  if (config.cluster.role !== "node" || (joinToken ?? config.cluster.join_token)) return undefined;
  if (await loadNodeIdentity(dataDir)) return undefined;
  return {
    path: "cluster.join_token",
    message:
      `expected a one-time join token from the controller (POST /api/cluster/join-tokens or its Cluster page): this node has not joined a cluster (no identity in ${dataDir}/cluster/); set cluster.join_token, --join-token or WAF_CLUSTER_JOIN_TOKEN`,
  };
}

/** The identity saved by an earlier join, or undefined. */
export async function loadNodeIdentity(dataDir: string): Promise<NodeIdentity | undefined> {
  const dir = dirOf(dataDir);
  await finishRenewal(dir);
  try {
    const meta = JSON.parse(await Deno.readTextFile(`${dir}/node.json`)) as {
      node_id: string;
      name: string;
      controller_url: string;
    };
    return {
      nodeId: meta.node_id,
      name: meta.name,
      controllerUrl: meta.controller_url,
      cert: await Deno.readTextFile(`${dir}/node.crt`),
      key: await Deno.readTextFile(`${dir}/node.key`),
      caCert: await Deno.readTextFile(`${dir}/ca.crt`),
    };
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
}

async function saveNodeIdentity(dataDir: string, id: NodeIdentity): Promise<void> {
  const dir = dirOf(dataDir);
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  await writePrivate(`${dir}/node.key`, id.key);
  await Deno.writeTextFile(`${dir}/node.crt`, id.cert, { mode: 0o644 });
  await Deno.writeTextFile(`${dir}/ca.crt`, id.caCert, { mode: 0o644 });
  // Written last: its presence means the identity is complete.
  await Deno.writeTextFile(
    `${dir}/node.json`,
    JSON.stringify(
      { node_id: id.nodeId, name: id.name, controller_url: id.controllerUrl },
      null,
      2,
    ) + "\n",
  );
}

/**
 * Joins the controller with a one-time token: pins its CA, makes a key pair and CSR here, sends
 * the CSR with the token, and saves the signed certificate with the key.
 */
export async function joinCluster(options: {
  readonly dataDir: string;
  readonly controllerUrl: string;
  readonly token: string;
  readonly name: string;
}): Promise<NodeIdentity> {
  const parsed = parseJoinToken(options.token);
  if (!parsed) {
    throw new AppError(400, "JOIN_TOKEN_INVALID", "The join token is not a waf join token");
  }
  const caCert = await fetchPinnedCa(options.controllerUrl, parsed.caFingerprint);
  const { key, csr } = await createCsr(parsed.nodeId);
  const client = new ControllerClient(options.controllerUrl, caCert);
  try {
    const res = await client.request("POST", "/api/cluster/join", {
      token: options.token,
      csr,
      name: options.name,
    });
    const cert = res.body["certificate"];
    if (res.status !== 200 || typeof cert !== "string" || res.body["node_id"] !== parsed.nodeId) {
      const error = res.body["error"] as { code?: string; message?: string } | undefined;
      throw new AppError(
        res.status >= 400 && res.status < 500 ? res.status : 502,
        error?.code ?? "CLUSTER_JOIN_FAILED",
        `The controller refused the join (${res.status}): ${error?.message ?? "no reason given"}`,
      );
    }
    const identity: NodeIdentity = {
      nodeId: parsed.nodeId,
      name: options.name,
      controllerUrl: options.controllerUrl,
      cert,
      key,
      caCert,
    };
    await saveNodeIdentity(options.dataDir, identity);
    return identity;
  } finally {
    client.close();
  }
}
