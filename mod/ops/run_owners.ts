/**
 * Which controller runs what, for a scheduler that shares its store with other controllers (the
 * production profile). A run records the controller that started it: its row's `detail` holds
 * `{"controller": "<id>"}` while it runs (the run's end writes the real detail over it), so
 *
 * - a run left `running` is marked interrupted only once its process is really gone: it is this
 *   controller's own (not in flight here), its controller is in the registry but no longer alive,
 *   or its controller is not in the registry at all {@link STALE_MS} after the run started (a
 *   controller registers with its first heartbeat; a row naming none is an older build's);
 * - a `running` row of a task that is not in flight here is a run on another live controller,
 *   once the rows of gone controllers are marked (the scheduler sweeps at every tick).
 */
import type { OpsTasksRepo, RunRow } from "../../db/ops_tasks_repo.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import { STALE_MS } from "../deployment/coordinator.ts";

/** The deployment a scheduler shares its store with. */
export interface SharedStore {
  /** This controller's id, recorded with every run it starts. */
  readonly controllerId: string;
  /** The registry's controllers and their liveness (the coordinator's `controllers()`). */
  readonly controllers: () => Promise<
    readonly { readonly id: string; readonly alive: boolean }[]
  >;
}

/** The controller a run row names, or null (a run of an older build, or of one process). */
export function ownerOf(r: RunRow): string | null {
  if (r.detail === null) return null;
  try {
    const d = JSON.parse(r.detail) as { controller?: unknown } | null;
    return typeof d?.controller === "string" ? d.controller : null;
  } catch {
    return null;
  }
}

export class RunOwners {
  readonly #shared: SharedStore;
  readonly #repo: OpsTasksRepo;
  readonly #clock: Clock;
  readonly #transaction: <T>(fn: () => T) => T;
  readonly #logger: Logger;
  /** What a run's row holds while it runs. */
  readonly startDetail: string;

  constructor(deps: {
    readonly shared: SharedStore;
    readonly repo: OpsTasksRepo;
    readonly clock: Clock;
    readonly transaction: <T>(fn: () => T) => T;
    readonly logger: Logger;
  }) {
    this.#shared = deps.shared;
    this.#repo = deps.repo;
    this.#clock = deps.clock;
    this.#transaction = deps.transaction;
    this.#logger = deps.logger;
    this.startDetail = JSON.stringify({ controller: deps.shared.controllerId });
  }

  /**
   * Marks interrupted the runs left `running` whose process is gone (`inFlight`: this process's
   * runs); returns how many. A registry that cannot answer marks none.
   */
  async sweep(inFlight: ReadonlySet<number>): Promise<number> {
    const self = this.#shared.controllerId;
    const left = this.#repo.running(null).filter((r) => !inFlight.has(r.id));
    if (left.length === 0) return 0;
    const foreign = left.some((r) => {
      const owner = ownerOf(r);
      return owner !== null && owner !== self;
    });
    const registry = foreign ? await this.#registry() : [];
    if (registry === undefined) return 0;
    const now = this.#clock.now();
    const gone = (r: RunRow) => {
      const owner = ownerOf(r);
      if (owner === null || owner === self) return true;
      const c = registry.find((c) => c.id === owner);
      return c ? !c.alive : now - r.started_at >= STALE_MS;
    };
    const marked = this.#transaction(() =>
      left.filter((r) => !inFlight.has(r.id) && gone(r) && this.#repo.interruptedRun(r.id, now))
    );
    if (marked.length > 0) {
      this.#logger.warn("task runs whose controller is gone marked interrupted", {
        runs: marked.map((r) => ({ id: r.id, task: r.task_id, controller: ownerOf(r) })),
      });
    }
    return marked.length;
  }

  /** Whether the task runs on another controller (a `running` row not in flight here). */
  elsewhere(task: string, inFlight: ReadonlySet<number>): boolean {
    return this.#repo.running(task).some((r) => !inFlight.has(r.id));
  }

  /** Whether the registry lists another live controller; undefined when it cannot answer. */
  async othersAlive(): Promise<boolean | undefined> {
    const registry = await this.#registry();
    return registry?.some((c) => c.alive && c.id !== this.#shared.controllerId);
  }

  async #registry() {
    try {
      return await this.#shared.controllers();
    } catch (err) {
      this.#logger.warn("the controllers registry cannot answer", { error: err as Error });
      return undefined;
    }
  }
}
