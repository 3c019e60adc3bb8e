/**
 * Where the PostgreSQL shipper is in the store: its cursor (the last row id shipped), asked of the
 * writer when the shipper is created, saved after every batch, and saved later when the store
 * refused it at the start.
 */
import type { ShipStart } from "../../db/access_log_cursors.ts";
import type { Clock } from "../core/clock.ts";
import type { Logger } from "../core/logger.ts";
import type { ShipSource } from "./writer.ts";

/**
 * How far before its creation a sink whose start failed in the store starts (by the records'
 * time): a record is written up to a flush interval (and the writer's backlog) after its
 * request ended, so a row written after the first attempt may be of a request that ended a
 * little before it. The price: up to a minute of records from before the sink is shipped too.
 */
const START_MARGIN_MS = 60_000;

export class ShipCursor {
  readonly #source: ShipSource;
  readonly #name: string;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #createdAt: number;
  #starting: Promise<ShipStart> | undefined;
  /** The start was read but the store refused to save it: saved before the shipper idles. */
  #unsaved = false;
  /** The last row id shipped; undefined until the start is known. */
  value: number | undefined;

  /**
   * Asks where shipping starts now, as the shipper is created: the request takes its place among
   * the writes (the writer thread handles them in order), so every row written after this point
   * is after the cursor. A new sink starts at the present (it does not replay the retained
   * history), and that present must be this moment, not whenever the writer answers: asking for
   * the saved cursor first and for the newest id only after the answer let the rows written in
   * between (the first requests of a server whose writer thread started slowly) pass unshipped
   * and uncounted. When the store refuses only the cursor's save, the start read is kept and
   * saved later; when the request fails outright, the retry asks for the start since this moment
   * (less {@link START_MARGIN_MS}), not for the newest id then, which skipped every row written
   * between the two.
   */
  constructor(source: ShipSource, name: string, deps: { clock: Clock; logger: Logger }) {
    this.#source = source;
    this.#name = name;
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#createdAt = deps.clock.now();
    this.#starting = source.startCursor(name, this.#createdAt);
  }

  /** The cursor to ship after: its start once known (asked again after a failure), saved. */
  async current(): Promise<number> {
    if (this.value === undefined) {
      const start = this.#starting ??
        this.#source.startCursor(
          this.#name,
          this.#clock.now(),
          this.#createdAt - START_MARGIN_MS,
        );
      this.#starting = undefined;
      const answer = await start;
      this.value = answer.cursor;
      this.#unsaved = !answer.saved;
      if (this.#unsaved) {
        this.#logger.warn(
          "PostgreSQL access-log sink could not save where it starts; saving it later",
          { cursor: this.value, error: answer.error ?? null },
        );
      }
    }
    if (this.#unsaved) {
      // Until it is saved a restart would start at the newest id then: save it before idling.
      await this.#source.saveCursor(this.#name, this.value, this.#clock.now()).then(
        () => this.#saved(),
        () => {},
      );
    }
    return this.value;
  }

  /**
   * Saves the cursor (moved past a shipped batch). A failed save re-ships the batch after a
   * restart, which the insert's ON CONFLICT absorbs.
   */
  async save(): Promise<void> {
    await this.#source.saveCursor(this.#name, this.value!, this.#clock.now());
    this.#saved();
  }

  /** The cursor is persisted: one that was not is now (the operator was told, and is again). */
  #saved(): void {
    if (!this.#unsaved) return;
    this.#unsaved = false;
    this.#logger.info("PostgreSQL access-log sink saved where it starts", {
      cursor: this.value ?? null,
    });
  }
}
