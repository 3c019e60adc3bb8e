/**
 * A controller and nodes for cluster tests, all real listeners on port 0 in this process: the
 * controller's cluster listener is the real mTLS `node:https` server, each node has its own
 * data directory and store, and joins with a real token over the network.
 */
import { ADMIN, callJson, completeSetup, login, type Session } from "./identity.ts";
import { startTestServer, type TestServer } from "./server.ts";
import type { ServerDeps } from "../../app/server.ts";

export interface Controller {
  readonly server: TestServer;
  readonly admin: Session;
  /** Issues a join token through the API (`POST /api/cluster/join-tokens`). */
  token(body?: Record<string, unknown>): Promise<string>;
}

export async function startController(
  config: Record<string, unknown> = {},
  deps: Partial<ServerDeps> = {},
): Promise<Controller> {
  const server = await startTestServer({
    config: { cluster: { listen: "127.0.0.1:0", ...config } },
    deps,
  });
  await completeSetup(server);
  const admin = await login(server, ADMIN.username, ADMIN.password);
  return {
    server,
    admin,
    async token(body = {}) {
      const r = await callJson(server, "POST", "/api/cluster/join-tokens", {
        session: admin,
        body,
      });
      if (r.status !== 201) throw new Error(`join token: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.token as string;
    },
  };
}

/** A node of `controller`, joining with `token` unless its data directory holds an identity. */
export async function startNode(
  controllerUrl: string,
  options: {
    token?: string;
    dir?: string;
    name?: string;
    config?: Record<string, unknown>;
    deps?: Partial<ServerDeps>;
  } = {},
): Promise<TestServer> {
  return await startTestServer({
    dir: options.dir,
    config: {
      cluster: {
        role: "node",
        controller_url: controllerUrl,
        name: options.name ?? "edge",
        heartbeat_interval: "1s",
        ...options.config,
      },
    },
    deps: { env: { clusterJoinToken: options.token }, ...options.deps },
  });
}

/** Starts a node and waits until it has joined and its first heartbeat was accepted. */
export async function joinedNode(
  controller: Controller,
  name: string,
  options: Parameters<typeof startNode>[1] = {},
): Promise<TestServer> {
  const node = await startNode(controller.server.clusterUrl!, {
    token: await controller.token(),
    name,
    ...options,
  });
  await eventually(`${name} connected`, async () => {
    const h = await nodeHealth(node);
    return h.link === "connected" ? h : undefined;
  });
  return node;
}

/** Polls `fn` every 100 ms until it returns a value other than undefined (at most `ms`). */
export async function eventually<T>(
  what: string,
  fn: () => T | undefined | Promise<T | undefined>,
  ms = 15_000,
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The node's `/health/cluster` body. */
export async function nodeHealth(node: TestServer): Promise<Record<string, unknown>> {
  return await (await node.api("/health/cluster")).json();
}
