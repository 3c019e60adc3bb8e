/**
 * What the management plane changes on every data-plane worker at once (`app/data_workers.ts`):
 * the edge cache its routes purge and report, and the ACME HTTP-01 answers the issuer adds.
 */
import type { AcmeChallenges } from "../mod/data_plane/acme_challenges.ts";
import { createEdgeCache, type EdgeCache } from "../mod/protection/edge_cache.ts";
import type { ToWorker } from "./data_worker_protocol.ts";
import type { WorkerQuestions } from "./data_worker_questions.ts";
import type { WorkerSlot } from "./data_worker_slot.ts";
import { sumCacheStats } from "./data_worker_stats.ts";

/**
 * The routes' edge cache: purges go to every worker (the API's count adds up their answers);
 * stats add up their last reports.
 */
export function workersEdgeCache(
  slots: readonly WorkerSlot[],
  questions: WorkerQuestions,
): EdgeCache {
  const local = createEdgeCache();
  return {
    ...local,
    purge(siteId, pathPrefix) {
      for (const s of slots) s.post({ t: "purge", id: 0, siteId, pathPrefix });
      return local.purge(siteId, pathPrefix);
    },
    async purgeAll(siteId, pathPrefix) {
      const asked = await questions.ask(slots, (id) => ({ t: "purge", id, siteId, pathPrefix }));
      // A worker that did not answer in time still purges when it reads the message; only its
      // count is unknown, and the answer says so instead of being silently smaller.
      return {
        purged: asked.answers.reduce((a, b) => a + b, local.purge(siteId, pathPrefix)),
        unanswered: asked.unanswered,
      };
    },
    stats: () => sumCacheStats(local.stats(), slots),
  };
}

/** ACME answers: kept here (a restarted worker gets them) and sent to every worker. */
export class WorkersAcme implements AcmeChallenges {
  readonly #answers = new Map<string, readonly [string, string, string]>();
  readonly #slots: readonly WorkerSlot[];

  constructor(slots: readonly WorkerSlot[]) {
    this.#slots = slots;
  }

  /** Every answer, as a starting worker receives them: [host, token, key authorisation]. */
  all(): Array<readonly [string, string, string]> {
    return [...this.#answers.values()];
  }

  answer(host: string, token: string): string | undefined {
    return this.#answers.get(`${host} ${token}`)?.[2];
  }

  add(host: string, token: string, keyAuthorization: string): void {
    this.#answers.set(`${host} ${token}`, [host, token, keyAuthorization]);
    this.#tell(host, token, keyAuthorization);
  }

  remove(host: string, token: string): void {
    this.#answers.delete(`${host} ${token}`);
    this.#tell(host, token, null);
  }

  get size(): number {
    return this.#answers.size;
  }

  #tell(host: string, token: string, answer: string | null): void {
    for (const s of this.#slots) s.post({ t: "acme", host, token, answer } satisfies ToWorker);
  }
}
