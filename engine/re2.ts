/**
 * The one wrapper of `re2-wasm`: operator-supplied regular expressions run on RE2, whose
 * matching time is linear in the input, so a pattern such as `(a+)+$` cannot stall the proxy
 * the way a backtracking engine would. RE2 has no look-around or back-references; such a
 * pattern is refused with RE2's own message.
 *
 * RE2 runs in a WebAssembly instance with a fixed 16 MiB heap (about 11 MiB free after
 * start-up) that its JavaScript API never frees, and running out of it aborts the call in the
 * middle, leaking what it had allocated. This file owns that heap:
 *
 * - a compiled expression is shared by source and flags and reference counted by its holders
 *   (compiled rule sets, which the policies still in use retain); the last release frees it;
 * - validation compiles, measures and frees (a refused or merely checked pattern keeps nothing);
 * - a pattern is refused when {@link MAX_PATTERNS} distinct ones are in use, when its program
 *   is too large to match at a bounded cost per character ({@link MAX_PROGRAM_SIZE}
 *   instructions, estimated in `re2_cost.ts`), or when, compiled, it would leave less than
 *   {@link HEADROOM_BYTES} free for matching;
 * - inputs longer than {@link SLICE} characters are matched in overlapping slices, so a large
 *   body never needs a copy of itself inside the heap;
 * - when the heap runs out anyway (a pattern too large to compile, RE2's DFA caches grown by
 *   the inputs seen), the instance is replaced by a fresh one into which every live expression
 *   is compiled again, and the call is retried once.
 */
import { createRequire } from "node:module";
import { MAX_PROGRAM_SIZE, programSize } from "./re2_cost.ts";

export { MAX_PROGRAM_SIZE } from "./re2_cost.ts";

/**
 * Keeps the package in the module graph (and in a compiled binary) without loading it: never
 * called. The instances are loaded through `require`, whose cache can be cleared for a fresh one.
 * A static `import "re2-wasm"` did the same but also ran the package once at start, an instance
 * with its own 16 MiB heap that the first `Instance` replaced at once and nothing ever freed
 * (docs/data-plane.md, "Memory and V8 flags").
 */
export const inGraph = () => import("re2-wasm");

/** A compiled linear-time matcher. */
export interface Matcher {
  readonly source: string;
  test(input: string): boolean;
}

/** A matcher shared by everything that compiled the same pattern; see {@link compileRe2}. */
export interface SharedMatcher extends Matcher {
  /** The estimated size of its program (`re2_cost.ts`): what one character may cost it. */
  readonly size: number;
  /** Adds a holder. */
  retain(): void;
  /** Drops a holder; the last one frees the compiled expression. */
  release(): void;
}

/**
 * A compiled rule set holds its RE2 expressions; whoever keeps it (a policy, a cache) retains
 * it, and releases it when done. It starts with one holder: the caller that compiled it.
 */
export interface RuleSetHolder {
  retain(): void;
  release(): void;
}

/** Holder counting over a set of shared matchers. */
export function holderOf(matchers: readonly SharedMatcher[]): RuleSetHolder {
  return {
    retain: () => matchers.forEach((m) => m.retain()),
    release: () => matchers.forEach((m) => m.release()),
  };
}

/**
 * Why a pattern was refused: its syntax, its program's size, or RE2's memory or pattern count
 * (budgets, not the pattern's fault).
 */
export type RefusalReason = "syntax" | "size" | "memory" | "limit";

export type CompileResult =
  | { readonly ok: true; readonly matcher: SharedMatcher }
  | { readonly ok: false; readonly reason: RefusalReason; readonly message: string };

/** Distinct compiled patterns that may be in use at once. */
export const MAX_PATTERNS = 2_000;
/** Heap that must stay free after a compile: one slice's UTF-8 copy plus DFA cache growth. */
export const HEADROOM_BYTES = 4 << 20;
/** Inputs longer than this many UTF-16 units are matched slice by slice. */
export const SLICE = 512 * 1024;
/** Consecutive slices share this many units, so a match shorter than it is never cut. */
export const OVERLAP = 16 * 1024;

interface NativeRe2 {
  match(input: string, start: number, groups: boolean): { match: string; index: number };
  delete(): void;
}
interface NativeMap {
  keys(): { size(): number; get(i: number): number; delete(): void };
  get(key: number): string;
  delete(): void;
}
interface NativeModule {
  WrappedRE2: new (...args: unknown[]) => NativeRe2;
  _malloc(bytes: number): number;
  _free(ptr: number): void;
}
type Re2Class = new (pattern: string, flags: string) => { wrapper: NativeRe2 };

/** One WebAssembly instance of RE2 and its heap. */
class Instance {
  readonly #RE2: Re2Class;
  readonly #native: NativeModule;
  #constructed: NativeRe2 | undefined;

  constructor() {
    const require = createRequire(import.meta.url);
    const api = require.resolve("re2-wasm");
    const wasm = require.resolve("re2-wasm/build/wasm/re2.js");
    delete require.cache[api];
    delete require.cache[wasm];
    // Emscripten binds `console.warn` when it loads, for the message of every abort; aborts are
    // handled here (a refusal, a fresh instance), so the message would only alarm an operator.
    const warn = console.warn;
    console.warn = () => {};
    try {
      this.#RE2 = (require(api) as { RE2: Re2Class }).RE2;
      this.#native = require(wasm) as NativeModule;
    } finally {
      console.warn = warn;
    }
    this.#patch();
  }

  /**
   * `RE2`'s constructor keeps its native object only on success, so a refused pattern's object
   * would stay in the heap: constructions are recorded to free the last one when it throws. The
   * group-name map it reads once per construction is a native copy it never frees: it is
   * copied out and freed.
   */
  #patch(): void {
    const native = this.#native;
    const Wrapped = native.WrappedRE2;
    const record = (re: NativeRe2): NativeRe2 => this.#constructed = re;
    // A function, not an arrow: `RE2` calls it with `new` (returning an object replaces `this`).
    native.WrappedRE2 = function (...args: unknown[]) {
      return record(new Wrapped(...args));
    } as unknown as NativeModule["WrappedRE2"];
    const proto = Wrapped.prototype as { capturingGroupNames(): NativeMap | unknown };
    const groupNames = proto.capturingGroupNames as () => NativeMap;
    proto.capturingGroupNames = function (this: NativeRe2) {
      const map = groupNames.call(this);
      const keys = map.keys();
      const entries: Array<[number, string]> = [];
      for (let i = 0; i < keys.size(); i++) entries.push([keys.get(i), map.get(keys.get(i))]);
      keys.delete();
      map.delete();
      const names = new Map(entries);
      return {
        keys: () => ({ size: () => entries.length, get: (i: number) => entries[i]![0] }),
        get: (key: number) => names.get(key),
      };
    };
  }

  build(pattern: string, flags: string): Built {
    this.#constructed = undefined;
    try {
      return { ok: true, re: new this.#RE2(pattern, flags).wrapper };
    } catch (err) {
      free(this.#constructed);
      const oom = err instanceof WebAssembly.RuntimeError;
      return { ok: false, oom, message: err instanceof Error ? err.message : String(err) };
    } finally {
      this.#constructed = undefined;
    }
  }

  /** Whether {@link HEADROOM_BYTES} can be allocated (a failed attempt aborts, and is caught). */
  hasHeadroom(): boolean {
    try {
      const ptr = this.#native._malloc(HEADROOM_BYTES);
      if (ptr === 0) return false;
      this.#native._free(ptr);
      return true;
    } catch {
      return false;
    }
  }
}

type Built =
  | { readonly ok: true; readonly re: NativeRe2 }
  | { readonly ok: false; readonly message: string; readonly oom: boolean };

function free(re: NativeRe2 | undefined): void {
  try {
    re?.delete();
  } catch {
    // Already deleted, or left unusable by an aborted call: nothing more can be freed.
  }
}

let instance = new Instance();

/** Counters for diagnostics and tests. */
export interface Re2Stats {
  /** Distinct compiled patterns held now. */
  readonly patterns: number;
  /** Times the heap ran out and was replaced by a fresh instance. */
  readonly resets: number;
  /** Matches that still failed after a reset (answered as no match). */
  readonly failures: number;
  /** Patterns refused for memory or the pattern limit. */
  readonly refused: number;
}

const live = new Map<string, Shared>();
const stats = { resets: 0, failures: 0, refused: 0 };

export function re2Stats(): Re2Stats {
  return { patterns: live.size, ...stats };
}

class Shared implements SharedMatcher {
  refs = 1;
  #re: NativeRe2 | undefined;
  readonly #test: (input: string) => boolean;

  constructor(
    readonly source: string,
    readonly key: string,
    readonly flags: string,
    re: NativeRe2,
    readonly size: number,
  ) {
    this.#re = re;
    const literal = prefilterOf(source, flags === "iu");
    const lower = literal?.toLowerCase();
    this.#test = literal === undefined
      ? (input) => this.#match(input)
      : flags === "iu"
      ? (input) => input.toLowerCase().includes(lower!) && this.#match(input)
      : (input) => input.includes(literal) && this.#match(input);
  }

  test(input: string): boolean {
    return this.#test(input);
  }

  retain(): void {
    this.refs++;
  }

  release(): void {
    if (--this.refs > 0) return;
    if (live.get(this.key) === this) live.delete(this.key);
    free(this.#re);
    this.#re = undefined;
  }

  /** Compiles into the current instance (after a reset); left without one if it fails. */
  rebuild(): void {
    const b = instance.build(this.source, this.flags);
    this.#re = b.ok ? b.re : undefined;
  }

  /** Matches; if the heap runs out, resets it and tries once more, then answers no match. */
  #match(input: string): boolean {
    try {
      return this.#matchOnce(input);
    } catch {
      reset();
    }
    try {
      return this.#matchOnce(input);
    } catch {
      stats.failures++;
      return false;
    }
  }

  #matchOnce(input: string): boolean {
    if (this.#re) return matchSliced(this.#re, input);
    // A request that began on a policy since replaced may still hold a released matcher: it
    // compiles a private copy for the call.
    const b = instance.build(this.source, this.flags);
    if (!b.ok) throw new Error(b.message);
    try {
      return matchSliced(b.re, input);
    } finally {
      free(b.re);
    }
  }
}

/**
 * Replaces the instance by a fresh one and compiles every live expression into it: whatever
 * an aborted call leaked, and every DFA cache, goes with the old heap.
 */
function reset(): void {
  stats.resets++;
  instance = new Instance();
  for (const s of live.values()) s.rebuild();
}

/**
 * Matches `input` in slices of {@link SLICE} units overlapping by {@link OVERLAP}. Each slice
 * after the first carries the character before it as context and starts matching after it, so
 * `^` and `\b` keep their meaning. `$` would match at every slice's end: a match touching a
 * slice's end that begins inside the overlap is left to the next slice, which sees past it.
 */
function matchSliced(re: NativeRe2, input: string): boolean {
  if (input.length <= SLICE) return re.match(input, 0, false).index >= 0;
  for (let from = 0;; from += SLICE - OVERLAP) {
    const end = from + SLICE;
    const last = end >= input.length;
    const context = from === 0 ? 0 : 1;
    const text = input.slice(from - context, last ? input.length : end);
    const m = re.match(text, context, false);
    if (m.index >= 0) {
      const touchesEnd = m.index + m.match.length >= text.length;
      if (last || !touchesEnd || m.index < text.length - OVERLAP) return true;
    }
    if (last) return false;
  }
}

const flagsOf = (options: { readonly ignoreCase?: boolean }): string =>
  options.ignoreCase ? "iu" : "u";

/**
 * Compiles `pattern` (JavaScript syntax, always in Unicode mode) with RE2, or shares the
 * expression already compiled for the same source and flags. The caller holds one reference
 * and releases it when it no longer needs the matcher.
 *
 * @param pattern the expression source, without slashes
 * @param options `ignoreCase` for case-insensitive matching
 * @returns the matcher, or why the pattern was refused (RE2's message for a bad pattern)
 */
export function compileRe2(
  pattern: string,
  options: { readonly ignoreCase?: boolean } = {},
): CompileResult {
  const flags = flagsOf(options);
  const key = `${flags}/${pattern}`;
  const shared = live.get(key);
  if (shared) {
    shared.retain();
    return { ok: true, matcher: shared };
  }
  const r = compileFresh(pattern, flags);
  if (!r.ok) return r;
  const matcher = new Shared(pattern, key, flags, r.re, r.size);
  live.set(key, matcher);
  return { ok: true, matcher };
}

/**
 * Checks `pattern` as {@link compileRe2} would, budget included, and keeps nothing.
 *
 * @returns undefined when it would compile, else why not
 */
export function checkRe2(
  pattern: string,
  options: { readonly ignoreCase?: boolean } = {},
): { readonly reason: RefusalReason; readonly message: string } | undefined {
  const flags = flagsOf(options);
  if (live.has(`${flags}/${pattern}`)) return undefined;
  const r = compileFresh(pattern, flags);
  if (!r.ok) return r;
  free(r.re);
  return undefined;
}

/**
 * Compiles a pattern held by no one yet, within the pattern limit and the heap's headroom. A
 * compile that runs out of heap leaks what it had built, so the instance is replaced after it.
 */
function compileFresh(
  pattern: string,
  flags: string,
): { ok: true; re: NativeRe2; size: number } | {
  ok: false;
  reason: RefusalReason;
  message: string;
} {
  if (live.size >= MAX_PATTERNS) {
    stats.refused++;
    return {
      ok: false,
      reason: "limit",
      message: `Too many distinct regular expressions in use: the limit is ${MAX_PATTERNS}`,
    };
  }
  const size = programSize(pattern, flags === "iu");
  if (size > MAX_PROGRAM_SIZE) return tooLargeOrInvalid(pattern, flags, size);
  for (let attempt = 0; attempt < 2; attempt++) {
    const b = instance.build(pattern, flags);
    if (!b.ok && !b.oom) return { ok: false, reason: "syntax", message: b.message };
    if (b.ok) {
      if (instance.hasHeadroom()) return { ok: true, re: b.re, size };
      free(b.re);
      if (attempt === 1) break;
    }
    // Out of heap: retry once in a fresh instance (the heap may only have been fragmented, or
    // filled by DFA caches); an aborted compile leaked, so its instance is replaced either way.
    reset();
  }
  stats.refused++;
  return {
    ok: false,
    reason: "memory",
    message:
      `Regular expression memory is full: the pattern does not fit beside the ${live.size} ` +
      "patterns in use; remove unused rules or simplify this pattern",
  };
}

/**
 * Refuses a pattern over the size limit without building it (building a program of tens of
 * thousands of instructions takes seconds): RE2's own verdict on its syntax comes first, read
 * from the pattern with every count cut to one, which parses exactly when the pattern does
 * (counts over RE2's own limit aside, which are too large either way). Only an invalid pattern is
 * built, and RE2 refuses it while parsing, before it compiles anything.
 */
function tooLargeOrInvalid(
  pattern: string,
  flags: string,
  size: number,
): { ok: false; reason: RefusalReason; message: string } {
  const cut = instance.build(
    pattern.replace(
      COUNTED,
      (_m, open: string, tail: string) =>
        open + (tail === undefined ? "1}" : tail === "," ? "0,}" : "0,1}"),
    ),
    flags,
  );
  if (cut.ok) free(cut.re);
  else if (!cut.oom) {
    const b = instance.build(pattern, flags);
    if (b.ok) free(b.re);
    else if (!b.oom) return { ok: false, reason: "syntax", message: b.message };
  }
  stats.refused++;
  return { ok: false, reason: "size", message: tooLarge(size) };
}

/** A counted repetition (`{3}`, `{2,}`, `{1,1000}`) not escaped: its `{` and what follows the count. */
const COUNTED = /(?<!\\)(\{)\d+(,\d*)?\}/g;

/** Why a pattern's program is too large, with the limit and what makes programs large. */
function tooLarge(size: number): string {
  return `Pattern too large: RE2 would compile it to about ${size} instructions, over the ` +
    `limit of ${MAX_PROGRAM_SIZE} (a counted repetition is written out once per count: ` +
    "x{1,100} is 100 copies of x; use + or * where the count does not matter)";
}

/** The literal prefilter of a pattern, ASCII only when case-insensitive. */
function prefilterOf(pattern: string, ignoreCase: boolean): string | undefined {
  const found = requiredLiteral(pattern);
  // Case-insensitive prefilters stay ASCII: RE2's case folding differs from toLowerCase beyond it.
  // deno-lint-ignore no-control-regex -- the ASCII range itself
  return ignoreCase && found !== undefined && !/^[\x00-\x7f]+$/.test(found) ? undefined : found;
}

const MIN_LITERAL = 3;
/** Escapes that stand for one literal character (punctuation); letters and digits are classes. */
const PUNCTUATION = /^[^A-Za-z0-9]$/;

/**
 * The longest run of literal characters every match must contain, for a cheap `includes`
 * prefilter before RE2 (each RE2 call copies the input into WebAssembly memory). Conservative:
 * a pattern with alternation, groups, inline flags or escapes other than escaped punctuation
 * gets no prefilter, and a character followed by a quantifier ends the run.
 */
export function requiredLiteral(pattern: string): string | undefined {
  if (/[|()]/.test(pattern)) return undefined;
  let best = "";
  let run = "";
  const end = () => {
    if (run.length > best.length) best = run;
    run = "";
  };
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    let lit: string | undefined;
    if (ch === "\\") {
      const next = pattern[++i];
      if (next === undefined) return undefined;
      if (PUNCTUATION.test(next)) lit = next;
      else if (!"dDwWsSbB".includes(next)) return undefined;
    } else if (ch === "[") {
      const close = pattern.indexOf("]", i + 2);
      if (close < 0 || pattern.slice(i, close).includes("\\")) return undefined;
      i = close;
    } else if (ch === "{") {
      const close = pattern.indexOf("}", i);
      if (close < 0) return undefined;
      i = close;
    } else if (!".^$+*?}]".includes(ch)) {
      lit = ch;
    }
    const quant = pattern[i + 1];
    if (lit === undefined || quant === "?" || quant === "*" || quant === "{") {
      end();
      continue;
    }
    run += lit;
    if (quant === "+") end();
  }
  end();
  return best.length >= MIN_LITERAL ? best : undefined;
}
