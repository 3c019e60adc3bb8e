/**
 * The data plane's side of judging a body past the prefix the engine reads whole
 * (engine/body_tail.ts): fed the body's bytes as they go by (decoded first when the body has a
 * Content-Encoding), it judges each window a slice at a time, so the event loop keeps serving,
 * and says when the body must not reach the upstream whole: an attack in a window (blocking at the
 * site's level), a coding that breaks off, or more than can be judged under `oversize_action:
 * block`. What it holds: one window and its context, and for a decoded body the decoder's state.
 */
import { BodyTail, type TailRequest } from "../../engine/body_tail.ts";
import { blocksAt } from "../../engine/inspect.ts";
import { confidenceOf } from "../../engine/make_finding.ts";
import type { EngineRequest, Finding, InspectOptions } from "../../engine/types.ts";
import { inspectSliced } from "../../mod/data_plane/inspect_sliced.ts";
import type { CompiledSite } from "../../mod/data_plane/policy.ts";
import { codingFinding, createDecoder, type Decoder, PADDING_RATIO } from "./body_encoding.ts";
import type { BodyPlan } from "./request_body.ts";

/** What happens to the part of a body past what is judged. */
export type OversizeAction = CompiledSite["oversize"]["plain"];

const LEVELS: Readonly<Record<CompiledSite["level"], InspectOptions>> = {
  strict: { level: "strict" },
  balanced: { level: "balanced" },
  low: { level: "low" },
};

/**
 * The judge of a body's tail, or undefined when the prefix the engine read is the whole body: a
 * buffered body as sent, or decoded before the inspection limit.
 *
 * @param site the request's site
 * @param plan how the body is read
 * @param req what the engine read (its body: the prefix, decoded when `coding` is set)
 * @param coding the body's coding when the engine read it decoded
 */
export function startTail(
  site: CompiledSite,
  plan: BodyPlan,
  req: EngineRequest,
  coding: string | undefined,
): TailJudge | undefined {
  if (site.mode === "off" || plan.kind === "none") return undefined;
  const judged = coding === undefined ? site.inspectBodyBytes : req.body?.length ?? 0;
  if (plan.kind === "buffered" && (coding === undefined || judged < site.inspectBodyBytes)) {
    return undefined;
  }
  if (plan.kind !== "buffered" && plan.kind !== "streaming") return undefined;
  const headers: Array<readonly [string, string]> = [];
  let contentType = "";
  for (const pair of req.headers) {
    if (pair[0] === "content-type") contentType = pair[1];
    else if (pair[0] === "host" || pair[0] === "referer") headers.push(pair);
  }
  return new TailJudge({
    request: { contentType, headers },
    coding,
    inspect: LEVELS[site.level],
    judged,
    limit: site.judgeBodyBytes,
    oversize: coding === undefined ? site.oversize.plain : site.oversize.decoded,
    enforce: site.mode === "block",
  });
}

/** A body past the judged limit, as a finding: medium, since it is a policy, not an attack. */
const OVERSIZE_SCORE = 55;

export interface TailOptions {
  readonly request: TailRequest;
  /** The Content-Encoding (one coding, not identity) when the body is judged decoded. */
  readonly coding?: string;
  readonly inspect: InspectOptions;
  /** The bytes at the start (decoded bytes for a coding) the prefix inspection judged. */
  readonly judged: number;
  /** The bytes (decoded bytes for a coding) judged at most. */
  readonly limit: number;
  readonly oversize: OversizeAction;
  /** Whether a blocking outcome stops the body (a site in `block` mode). */
  readonly enforce: boolean;
}

export class TailJudge {
  readonly #o: TailOptions;
  readonly #tail: BodyTail;
  #decoder: Decoder | undefined = undefined;
  /** The decoder's output being judged, to its end. */
  #consumer: Promise<void> | undefined = undefined;
  /** Bytes (decoded bytes for a coding) taken so far, the prefix's included. */
  #count = 0;
  /** Bytes of a coded body as sent, so far. */
  #wire = 0;
  #stopped = false;
  #queue: Promise<void> = Promise.resolve();
  /** What stops the body: an attack, an undecodable coding, or the oversize at `block`. */
  blocking: Finding | undefined = undefined;
  /** Set when the body went past the limit. */
  oversized = false;
  /** A finding recorded without stopping anything (the oversize at `log`, a coding at `low`). */
  logged: Finding | undefined = undefined;

  constructor(options: TailOptions) {
    this.#o = options;
    this.#tail = new BodyTail(options.request, options.judged);
  }

  /** Whether the body must not reach the upstream whole. */
  get stop(): boolean {
    return this.#o.enforce && this.blocking !== undefined;
  }

  /** Findings of the judged windows, and the recorded one. */
  get findings(): number {
    return this.#tail.findings + (this.logged === undefined ? 0 : 1);
  }

  /** The finding to record: what stops the body, or the strongest one seen. */
  get finding(): Finding | undefined {
    const best = this.#tail.best;
    const logged = this.logged;
    return this.blocking ??
      (logged !== undefined && (best === undefined || logged.score >= best.score) ? logged : best);
  }

  /** Takes the next bytes of the body as sent; resolves once they are judged. */
  write(chunk: Uint8Array): Promise<void> {
    return this.#queue = this.#queue.then(() => this.#write(chunk)).catch(this.#failed);
  }

  /** The body ended; resolves once all of it is judged. */
  end(): Promise<void> {
    return this.#queue = this.#queue.then(() => this.#end()).catch(this.#failed);
  }

  /** Judging never fails a request: what broke stops the judging, as a bug in a detector does. */
  readonly #failed = (): void => {
    this.#stopped = true;
  };

  async #write(chunk: Uint8Array): Promise<void> {
    if (this.#stopped) return;
    const coding = this.#o.coding;
    if (coding === undefined) return this.#take(chunk);
    const decoder = this.#decoder ?? this.#startDecoder(coding, chunk);
    if (decoder === undefined) return;
    this.#wire += chunk.length;
    if (!decoder.write(chunk)) {
      // The judging of the output is behind: wait for it (or for the decoder's end).
      await new Promise<void>((resolve) => {
        const done = () => {
          decoder.off("drain", done);
          decoder.off("close", done);
          resolve();
        };
        decoder.on("drain", done);
        decoder.on("close", done);
      });
    }
  }

  async #end(): Promise<void> {
    if (this.#decoder !== undefined) {
      if (!this.#stopped) this.#decoder.end();
      await this.#consumer;
    }
    if (!this.#stopped) await this.#judge(this.#tail.end());
  }

  #startDecoder(coding: string, first: Uint8Array): Decoder | undefined {
    const decoder = createDecoder(coding, first);
    if (decoder === undefined) {
      // The prefix check already reported the coding; nothing more is read.
      this.#stopped = true;
      return undefined;
    }
    this.#decoder = decoder;
    // Its errors end the reading below; one raised while nobody reads must not go unhandled.
    decoder.on("error", () => {});
    this.#consumer = (async () => {
      try {
        for await (const piece of decoder) {
          await this.#take(piece as Uint8Array);
          if (this.#stopped) break;
        }
      } catch {
        if (!this.#stopped) this.#undecodable();
      } finally {
        decoder.destroy();
      }
    })();
    return decoder;
  }

  /**
   * Judges the next bytes (decoded ones for a coding) up to the limit. A coded body's text past the
   * prefix is judged up to {@link PADDING_RATIO} bytes per byte sent: judging costs what the text
   * costs, so without the bound a few kilobytes of gzip would buy seconds of the engine's time;
   * past it the text is more than can be judged, like a body past the limit.
   */
  async #take(bytes: Uint8Array): Promise<void> {
    if (this.#stopped) return;
    const o = this.#o;
    const room = o.coding === undefined
      ? o.limit - this.#count
      : Math.min(o.limit, o.judged + this.#wire * PADDING_RATIO) - this.#count;
    const piece = bytes.length > room ? bytes.subarray(0, Math.max(0, room)) : bytes;
    this.#count += piece.length;
    await this.#judge(this.#tail.write(piece));
    if (!this.#stopped && bytes.length > room) this.#oversize();
  }

  async #judge(windows: EngineRequest[]): Promise<void> {
    const tail = this.#tail;
    for (const w of windows) {
      tail.record(await inspectSliced(w, this.#o.inspect));
      if (tail.blocking !== undefined) {
        this.blocking ??= tail.blocking;
        this.#stopped = true;
        return;
      }
    }
  }

  #oversize(): void {
    this.#stopped = true;
    this.oversized = true;
    const action = this.#o.oversize;
    if (action === "pass") return;
    const finding: Finding = {
      class: "request-smuggling",
      confidence: confidenceOf(OVERSIZE_SCORE),
      score: OVERSIZE_SCORE,
      location: this.#o.coding === undefined ? "body" : "header:content-encoding",
      evidence: this.#o.coding === undefined
        ? `more than ${this.#o.limit} bytes`
        : `${this.#count} bytes decoded from ${this.#wire} sent, more follow`,
      ruleId: "protocol.oversize_body",
    };
    if (action === "block") this.blocking ??= finding;
    else this.logged = finding;
  }

  /** A coding that breaks off past the prefix: as the prefix check judges one (docs/detection.md). */
  #undecodable(): void {
    this.#stopped = true;
    const finding = codingFinding("protocol.undecodable_body", this.#o.coding ?? "");
    const level = this.#o.inspect.level;
    if (level !== "low" && blocksAt(finding.confidence, level)) this.blocking ??= finding;
    else this.logged = finding;
  }
}
