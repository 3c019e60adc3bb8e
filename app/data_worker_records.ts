/**
 * A data-plane worker's records on their way to the main thread (`app/data_worker.ts`): access-log
 * rows, the site counters they added, ALAP observations and API-discovery samples, in batches.
 */
import { type AccessRecord, recordLines } from "../mod/access_log/record.ts";
import { isEventRecord } from "../mod/data_plane/record_events.ts";
import { isVerdict, sampleKey } from "../mod/access_log/admission.ts";
import { type SiteCounterSet, takeCounts } from "../mod/data_plane/site_counters.ts";
import type { Sample } from "../mod/apisec/inventory.ts";
import type { AlapArgs, FromWorker } from "./data_worker_protocol.ts";
import type { Inspection } from "../engine/types.ts";
import type { AlapPolicyDoc } from "../mod/protection/protection_schema.ts";
import type { ObservedRequest } from "../mod/protection/alap.ts";

/**
 * Records go in batches, at most {@link BATCH} or {@link FLUSH_MS} after the first: each batch
 * wakes the main thread and the writer thread once (see docs/data-plane.md, "Workers: the data plane
 * on every core"); reads through the API flush at once.
 */
const BATCH = 256;
const FLUSH_MS = 50;

/**
 * What this worker sends the main thread in batches (one message, one wake-up of the main thread,
 * per {@link FLUSH_MS} at most): the records already serialised as the access log's rows (one
 * string: `mod/access_log/lines.ts`), what the requests added to the site counters (this thread
 * counts them as the transaction's exit does anywhere) and, whole, only the records the main
 * thread's events and realtime feed look at; ALAP observations and API-discovery samples ride
 * along. A read through the management API asks for them at once (`flush`), so a trace id just
 * answered is found.
 */
export class RecordBatch {
  /** Rows of blocked, challenged and logged requests. */
  #lines: string[] = [];
  /** Rows of passed requests, which the main thread may sample, and how many per site. */
  #passLines: string[] = [];
  #passSites = new Map<string, number>();
  #events: AccessRecord[] = [];
  #alap: AlapArgs[] = [];
  #samples: Sample[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #counters: SiteCounterSet;
  readonly #post: (message: FromWorker) => void;

  constructor(counters: SiteCounterSet, post: (message: FromWorker) => void) {
    this.#counters = counters;
    this.#post = post;
  }

  /** The access log the proxy writes each finished request to. */
  readonly accessLog = {
    push: (record: AccessRecord): boolean => {
      if (isVerdict(record)) {
        this.#lines.push(recordLines(record));
      } else {
        this.#passLines.push(recordLines(record));
        const site = sampleKey(record.site);
        this.#passSites.set(site, (this.#passSites.get(site) ?? 0) + 1);
      }
      if (isEventRecord(record)) this.#events.push(record);
      if (this.#lines.length + this.#passLines.length >= BATCH) this.flush();
      else this.#later();
      return true;
    },
  };

  /** ALAP's `observe` here: the observation goes to the main thread's one tracker. */
  readonly observe = (
    siteId: string,
    req: ObservedRequest,
    inspection: Inspection,
    policy: AlapPolicyDoc,
  ): void => {
    this.#alap.push([siteId, req.client_ip, req.trace_id, inspection, policy]);
    this.#later();
  };

  /** API discovery's `sample` here: the sample goes to the main thread's inventory. */
  readonly sample = (sample: Sample): void => {
    this.#samples.push(sample);
    this.#later();
  };

  /** Sends what is held now. */
  flush(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const lines = this.#lines;
    const passLines = this.#passLines;
    const rows = lines.length + passLines.length;
    if (rows === 0 && this.#alap.length === 0 && this.#samples.length === 0) return;
    this.#post({
      t: "records",
      lines: lines.join(""),
      count: lines.length,
      passLines: passLines.join(""),
      passCount: passLines.length,
      passSites: [...this.#passSites],
      events: this.#events,
      counts: rows === 0 ? [] : takeCounts(this.#counters),
      alap: this.#alap,
      samples: this.#samples,
    });
    this.#lines = [];
    this.#passLines = [];
    this.#passSites.clear();
    this.#events = [];
    this.#alap = [];
    this.#samples = [];
  }

  #later(): void {
    this.#timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }
}
