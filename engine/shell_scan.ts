/**
 * What the command detector (`cmdi.ts`) learns while it reads one value's command positions,
 * kept so that no position reads the text again: the end of the segment a word stands in, where
 * the next output redirection is, which command each wildcard word expands to, and a command's
 * arguments read a word at a time. Positions come in order, so each of these is found once for
 * the value, not once for each position (`eval($(eval($(...` has a position every seven
 * characters, all in one segment).
 */
import { commandMatching } from "./shell_glob.ts";

/** An output redirection into a file, or into a device. */
const REDIRECT = String.raw`\d?>>?\s*(?:\/dev\/|[\w./-]+\.\w{1,5}\b|\/|~\/)`;
/** {@link REDIRECT} at one position: at the start of a command's arguments. */
const REDIRECT_HEAD = new RegExp(REDIRECT, "y");
/** {@link REDIRECT} after a space or quote, searched onwards from a position. */
const REDIRECT_NEXT = new RegExp(`[\\s'"]${REDIRECT}`, "g");

/** Characters that end a simple command (its segment). */
export function endsSegment(c: number): boolean {
  return c === 59 || c === 124 || c === 38 || c === 10 || c === 13 || c === 96 || c === 41;
}

/**
 * Characters of a command's arguments that are judged. Arguments past them do not change what
 * the first ones say, and reading them again at every command position of one long segment
 * (`eval($(eval($(...`, each `$(` a position) made the scan quadratic.
 */
const MAX_ARGS = 256;

/**
 * What one value's scan has learnt so far, reused from one command position to the next: the
 * end of the segment last read (positions come in order, so every word of a segment shares its
 * end) and where the next output redirection is.
 */
export class Scan {
  #segFrom = -1;
  #segEnd = -1;
  #redirectFrom = -1;
  #redirectAt = -1;
  /** Wildcard words already expanded: a value repeats the same few. */
  readonly #globs = new Map<string, string | undefined>();

  constructor(readonly s: string) {}

  /** {@link commandMatching}, once per distinct word of the value. */
  globbed(pattern: string): string | undefined {
    if (this.#globs.has(pattern)) return this.#globs.get(pattern);
    const name = commandMatching(pattern);
    this.#globs.set(pattern, name);
    return name;
  }

  /** The end of the simple command at `at`: its first segment-ending character from there. */
  segmentEnd(at: number): number {
    if (at >= this.#segFrom && at <= this.#segEnd) return this.#segEnd;
    const s = this.s;
    let end = at;
    while (end < s.length && !endsSegment(s.charCodeAt(end))) end++;
    this.#segFrom = at;
    this.#segEnd = end;
    return end;
  }

  /** Whether an output redirection follows `at` anywhere in the value (anywhere in the rest). */
  redirectAfter(at: number): boolean {
    return this.#redirectHead(at) || this.#nextRedirect(at) >= 0;
  }

  /** Whether an output redirection starts in `[from, to)` (in that text). */
  redirectWithin(from: number, to: number): boolean {
    if (from >= to) return false;
    if (this.#redirectHead(from)) return true;
    const next = this.#nextRedirect(from);
    return next >= 0 && next < to;
  }

  #redirectHead(at: number): boolean {
    REDIRECT_HEAD.lastIndex = at;
    return REDIRECT_HEAD.test(this.s);
  }

  /** Where the next redirection after a space or quote starts from `at`, or -1. */
  #nextRedirect(at: number): number {
    const known = this.#redirectFrom >= 0 && at >= this.#redirectFrom &&
      (this.#redirectAt < 0 || this.#redirectAt >= at);
    if (known) return this.#redirectAt;
    REDIRECT_NEXT.lastIndex = at;
    const m = REDIRECT_NEXT.exec(this.s);
    this.#redirectFrom = at;
    this.#redirectAt = m === null ? -1 : m.index;
    return this.#redirectAt;
  }
}

/** Whitespace as `trim()` and `\s` read it. */
function isWhite(c: number): boolean {
  return c <= 32 ? c === 32 || (c >= 9 && c <= 13) : c === 0xa0 || c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f ||
    c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/** Characters of one argument that are judged (its strength shows in its start). */
const MAX_TOKEN = 64;

/**
 * The arguments of a command, read a word at a time up to {@link MAX_ARGS} characters: only
 * the first words decide, and most commands stop being judged at the first plain word.
 */
export class Args {
  #at: number;
  readonly #end: number;
  /** Where the arguments start: the first character after the command word's whitespace. */
  readonly start: number;

  constructor(readonly s: string, from: number, segEnd: number) {
    let a = from;
    while (a < segEnd && isWhite(s.charCodeAt(a))) a++;
    this.start = a;
    this.#at = a;
    this.#end = Math.min(segEnd, a + MAX_ARGS);
  }

  /** Where the judged arguments end. */
  get end(): number {
    return this.#end;
  }

  /** The next argument (its first {@link MAX_TOKEN} characters), or undefined after the last. */
  next(): string | undefined {
    const s = this.s;
    let a = this.#at;
    // The rest of an argument cut at its first characters.
    if (a > this.start) { while (a < this.#end && !isWhite(s.charCodeAt(a))) a++; }
    while (a < this.#end && isWhite(s.charCodeAt(a))) a++;
    if (a >= this.#end) return undefined;
    const stop = Math.min(this.#end, a + MAX_TOKEN);
    let b = a;
    while (b < stop && !isWhite(s.charCodeAt(b))) b++;
    this.#at = b;
    return s.slice(a, b);
  }
}
