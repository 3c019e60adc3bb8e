/**
 * Cluster routes (docs/cluster.md). On a controller: join tokens (`write:cluster` to issue or
 * withdraw, `read:cluster` to list), the join itself (the one-time token is the credential), and
 * the cluster CA certificate (public: nodes pin it against their token). A node answers these
 * with 409 `CLUSTER_ROLE`: its controller is where the cluster is managed.
 */
import { z } from "zod";
import { AppError } from "../../mod/core/errors.ts";
import type { Enrollment } from "../../mod/cluster/enrollment.ts";
import { type JoinTokens, MAX_TOKEN_TTL_S } from "../../mod/cluster/join_tokens.ts";
import { clusterTotals, type Registry } from "../../mod/cluster/registry.ts";
import type { PolicySource } from "../../mod/cluster/policy_sync.ts";
import type { PolicyWatch } from "../../mod/cluster/policy_watch.ts";
import { auditContext } from "./actor.ts";
import { auditFailures, type AuditSink } from "./audited.ts";
import type { Ctx } from "./env.ts";
import { perm, PUBLIC, type RouteDef } from "./route.ts";
import { readJson, readQuery } from "./validate.ts";

/** The controller's parts the routes use; undefined on a node. */
export interface ControllerRouteDeps extends AuditSink {
  readonly tokens: JoinTokens;
  readonly enrollment: Enrollment;
  readonly registry: Registry;
  readonly caCertificate: string;
  readonly caFingerprint: string;
  /** The controller's policy: its version (in heartbeat answers) and snapshot. */
  readonly policy: PolicySource;
  /** Nodes' long-polls for a policy change. */
  readonly watch: PolicyWatch;
}

const heartbeatBody = z.strictObject({
  version: z.string().max(64),
  uptime_s: z.number().int().min(0),
  policy_version: z.string().max(128).nullable(),
  time: z.number().int().min(0),
  started_at: z.number().int().min(0).optional(),
  counters: z.record(z.string().max(64), z.number()).refine((o) => Object.keys(o).length <= 64, {
    message: "expected at most 64 counters",
  }),
  health: z.record(z.string().max(64), z.unknown()).refine(
    (o) => JSON.stringify(o).length <= 8192,
    { message: "expected at most 8 KiB of health facts" },
  ),
});

const watchQuery = z.strictObject({ since: z.string().max(128).optional() });

const renewBody = z.strictObject({ csr: z.string().max(16_384) });

const tokenBody = z.strictObject({
  note: z.string().max(200).optional(),
  ttl_seconds: z.number().int().min(60).max(MAX_TOKEN_TTL_S).optional(),
});

const joinBody = z.strictObject({
  token: z.string().max(256),
  csr: z.string().max(16_384),
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, {
    message: "expected 1 to 64 ASCII letters, digits, '.', '_' or '-'",
  }),
});

/** The controller's parts, or 409 `CLUSTER_ROLE` on a node. */
type Need = () => ControllerRouteDeps;

function needController(controller: ControllerRouteDeps | undefined): Need {
  return () => {
    if (!controller) {
      throw new AppError(
        409,
        "CLUSTER_ROLE",
        "This waf is a cluster node: the cluster is managed on its controller",
      );
    }
    return controller;
  };
}

/** Revokes or deletes a node, auditing a refusal. */
function nodeAction(need: Need, action: "revoke" | "delete") {
  return async (c: Ctx) => {
    const d = need();
    const id = c.req.param("id")!;
    return await auditFailures(c, d, {
      action: `cluster.node.${action}`,
      target: `cluster_node:${id}`,
    }, (): Promise<Response> => {
      if (action === "delete") {
        d.registry.remove(id, auditContext(c));
        return Promise.resolve(c.body(null, 204));
      }
      return Promise.resolve(c.json({ item: d.registry.revoke(id, auditContext(c)) }));
    });
  };
}

/** The operator's view of the nodes: list, read, revoke, delete (and no rolling upgrades). */
function nodeRoutes(need: Need): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/cluster/nodes",
      access: perm("read:cluster"),
      handler: (c) => {
        const { registry } = need();
        const items = registry.list();
        return c.json({
          items,
          totals: clusterTotals(items),
          clock_skew_limit_ms: registry.maxSkewMs,
        });
      },
    },
    {
      method: "GET",
      path: "/api/cluster/nodes/:id",
      access: perm("read:cluster"),
      handler: (c) => c.json({ item: need().registry.get(c.req.param("id")!) }),
    },
    {
      method: "POST",
      path: "/api/cluster/nodes/:id/revoke",
      access: perm("write:cluster"),
      handler: nodeAction(need, "revoke"),
    },
    {
      method: "DELETE",
      path: "/api/cluster/nodes/:id",
      access: perm("write:cluster"),
      handler: nodeAction(need, "delete"),
    },
    {
      method: "POST",
      path: "/api/cluster/upgrades",
      access: perm("write:cluster"),
      handler: () => {
        throw new AppError(
          501,
          "CLUSTER_UPGRADE_NOT_IMPLEMENTED",
          "Rolling upgrades need an updater, which this build does not have (as with OTA): upgrade each node's binary and restart it",
        );
      },
    },
  ];
}

/** What a joined node calls with its certificate: heartbeats, renewal, the policy. */
function nodeChannelRoutes(need: Need): RouteDef[] {
  return [
    {
      method: "POST",
      path: "/api/cluster/nodes/:id/heartbeat",
      access: { kind: "node" },
      handler: async (c) => {
        const d = need();
        const report = await readJson(c, heartbeatBody);
        const beat = d.registry.heartbeat(c.req.param("id")!, report, c.get("clientIp"));
        return c.json({ policy_version: d.policy.current().version, ...beat });
      },
    },
    {
      method: "POST",
      path: "/api/cluster/nodes/:id/certificate",
      access: { kind: "node" },
      handler: async (c) => {
        const d = need();
        const { csr } = await readJson(c, renewBody);
        const answer = await d.enrollment.renew(c.req.param("id")!, csr, auditContext(c));
        c.header("cache-control", "no-store");
        return c.json(answer);
      },
    },
    {
      method: "GET",
      path: "/api/cluster/nodes/:id/policy",
      access: { kind: "node" },
      handler: (c) => {
        c.header("cache-control", "no-store");
        return c.json(need().policy.snapshot());
      },
    },
    {
      method: "GET",
      path: "/api/cluster/nodes/:id/policy/watch",
      access: { kind: "node" },
      handler: async (c) => {
        const d = need();
        const { since } = readQuery(c, watchQuery);
        const answer = await d.watch.wait(c.req.param("id")!, since ?? "", c.req.raw.signal);
        c.header("cache-control", "no-store");
        if (answer.kind === "busy") {
          throw new AppError(
            503,
            "CLUSTER_WATCH_BUSY",
            "The controller holds as many policy watches as it allows; follow by heartbeat",
          );
        }
        if (answer.kind === "closed") {
          throw new AppError(503, "CLUSTER_STOPPING", "The controller is shutting down");
        }
        return c.json({ changed: answer.changed, policy_version: answer.policy_version });
      },
    },
  ];
}

/** Joining: the CA a node pins, the one-time join tokens and the join itself. */
function joinRoutes(need: Need): RouteDef[] {
  return [
    {
      method: "GET",
      path: "/api/cluster/ca",
      access: PUBLIC,
      handler: (c) => {
        const d = need();
        return c.json({ ca_certificate: d.caCertificate, fingerprint: d.caFingerprint });
      },
    },
    {
      method: "POST",
      path: "/api/cluster/join-tokens",
      access: perm("write:cluster"),
      handler: async (c) => {
        const d = need();
        const created = await auditFailures(c, d, {
          action: "cluster.join_token.create",
          target: "cluster",
        }, async () => d.tokens.create(await readJson(c, tokenBody), auditContext(c)));
        c.header("cache-control", "no-store");
        return c.json(created, 201);
      },
    },
    {
      method: "GET",
      path: "/api/cluster/join-tokens",
      access: perm("read:cluster"),
      handler: (c) => c.json({ items: need().tokens.list() }),
    },
    {
      method: "DELETE",
      path: "/api/cluster/join-tokens/:id",
      access: perm("write:cluster"),
      handler: async (c: Ctx) => {
        const d = need();
        const id = c.req.param("id")!;
        await auditFailures(c, d, {
          action: "cluster.join_token.delete",
          target: `cluster_node:${id}`,
        }, () => Promise.resolve(d.tokens.remove(id, auditContext(c))));
        return c.body(null, 204);
      },
    },
    {
      method: "POST",
      path: "/api/cluster/join",
      access: { kind: "node", credential: "join_token" },
      handler: async (c) => {
        const d = need();
        const body = await auditFailures(
          c,
          d,
          { action: "cluster.join", target: "cluster" },
          () => readJson(c, joinBody),
        );
        const answer = await d.enrollment.join(body, auditContext(c));
        c.header("cache-control", "no-store");
        return c.json(answer);
      },
    },
  ];
}

export function clusterRoutes(controller: ControllerRouteDeps | undefined): RouteDef[] {
  const need = needController(controller);
  return [...nodeRoutes(need), ...nodeChannelRoutes(need), ...joinRoutes(need)];
}
