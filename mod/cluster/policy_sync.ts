/**
 * Policy distribution. The controller's policy is every row the compiled policy is built from
 * (sites with their certificates, rules, protection, edge, API security, block pages); its version
 * is the SHA-256 of those rows, recomputed after a policy swap. A node that learns of another
 * version (from its policy watch, `node_watch.ts`, or a heartbeat answer) fetches the snapshot
 * over the same mTLS channel, checks that it hashes to the version, and in one store transaction
 * replaces its rows and recompiles: if the compile fails the transaction rolls back and the node
 * keeps its last good policy.
 */
import { z } from "zod";
import {
  type ClusterPolicyRepo,
  objectValues,
  type PolicyRows,
  siteValues,
} from "../../db/cluster_policy_repo.ts";
import type { SettingsRepo } from "../../db/settings_repo.ts";
import type { Clock } from "../core/clock.ts";
import { sha256Hex } from "../core/digest.ts";
import type { Logger } from "../core/logger.ts";
import type { ControllerClient } from "./controller_client.ts";
import type { PolicyFollower } from "./node_agent.ts";

/** The settings key where a node keeps the version it enforces. */
export const POLICY_VERSION_KEY = "cluster.policy_version";

/** The version of a set of rows: SHA-256 over a canonical encoding. */
export function policyVersion(rows: PolicyRows): string {
  const canonical = JSON.stringify([rows.sites.map(siteValues), rows.objects.map(objectValues)]);
  return sha256Hex(canonical);
}

export interface PolicySnapshot extends PolicyRows {
  readonly version: string;
}

/**
 * The controller's side: the current version (cached until the policy changes). A swap only
 * marks it stale: reading and hashing every row on each swap cost a burst of management writes
 * one full read of the policy per write; the version is computed when a node next asks.
 */
export function createPolicySource(deps: { repo: ClusterPolicyRepo; clock: Clock }) {
  let cached: { version: string; since: number } | undefined;
  /** When the first swap since the version was last computed happened. */
  let staleSince: number | undefined;
  return {
    /** Told after every policy swap. */
    changed(): void {
      staleSince ??= deps.clock.now();
    },
    current(): { version: string; since: number } {
      if (!cached || staleSince !== undefined) {
        const version = policyVersion(deps.repo.read());
        if (cached?.version !== version) {
          cached = { version, since: staleSince ?? deps.clock.now() };
        }
        staleSince = undefined;
      }
      return cached;
    },
    snapshot(): PolicySnapshot {
      const rows = deps.repo.read();
      return { version: policyVersion(rows), ...rows };
    },
  };
}

export type PolicySource = ReturnType<typeof createPolicySource>;

const json = z.string().max(4_194_304).refine((v) => {
  try {
    JSON.parse(v);
    return true;
  } catch {
    return false;
  }
}, { message: "expected JSON" });
const time = z.number().int().min(0);
const snapshotSchema = z.object({
  version: z.string().regex(/^[0-9a-f]{64}$/),
  sites: z.array(z.object({
    id: z.string().min(1).max(128),
    name: z.string().min(1).max(256),
    config: json,
    created_at: time,
    updated_at: time,
  })).max(10_000),
  objects: z.array(z.object({
    id: z.string().min(1).max(128),
    kind: z.string().min(1).max(64),
    site_id: z.string().max(128).nullable(),
    position: z.number().int(),
    config: json,
    created_at: time,
    updated_at: time,
  })).max(1_000_000),
});

export interface PolicyFollowerDeps {
  readonly nodeId: string;
  readonly repo: ClusterPolicyRepo;
  readonly settings: SettingsRepo;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly transaction: <T>(fn: () => T) => T;
  /** Recompiles the data plane's policy from the store and swaps it (throws if it cannot). */
  readonly rebuild: () => void;
}

/** The node's side: fetch, check, store and swap. */
export function createPolicyFollower(deps: PolicyFollowerDeps): PolicyFollower {
  let current = deps.settings.get(POLICY_VERSION_KEY) as string | undefined ?? null;
  return {
    version: () => current,
    async follow(version: string, client: ControllerClient): Promise<void> {
      const res = await client.request(
        "GET",
        `/api/cluster/nodes/${deps.nodeId}/policy`,
        undefined,
        { timeoutMs: 30_000 },
      );
      if (res.status !== 200) {
        const code = (res.body["error"] as { code?: string } | undefined)?.code;
        throw new Error(`the controller answered ${res.status} ${code ?? ""}`.trim());
      }
      const parsed = snapshotSchema.safeParse(res.body);
      if (!parsed.success) throw new Error("the policy snapshot is malformed");
      const snapshot = parsed.data;
      if (policyVersion(snapshot) !== snapshot.version) {
        throw new Error("the policy snapshot does not hash to its version");
      }
      // Already enforced (the watch and a heartbeat both told of it): nothing to replace.
      if (snapshot.version === current) return;
      deps.transaction(() => {
        deps.repo.replace(snapshot);
        deps.settings.set(POLICY_VERSION_KEY, snapshot.version, deps.clock.now());
        // Inside the transaction: a policy that does not compile rolls the rows back.
        deps.rebuild();
      });
      current = snapshot.version;
      deps.logger.info("applied the controller's policy", {
        version: snapshot.version.slice(0, 12),
        announced: version.slice(0, 12),
        sites: snapshot.sites.length,
        objects: snapshot.objects.length,
      });
    },
  };
}
