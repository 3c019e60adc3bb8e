/**
 * Header (and path) verdicts by name and text. Browsers repeat their headers on every request (the
 * User-Agent, the page in Referer, client hints), and those values are long and not inert
 * (`(KHTML, like Gecko)`, a whole URL), so judging them dominated the engine's time for benign
 * traffic (a browser's User-Agent alone cost as much as the rest of the request). Verdicts,
 * findings included so an attack in a header is reported every time, are kept for values up to
 * 512 characters, 4,096 at most; a flood of distinct values only empties the memo.
 */
import type { Finding } from "./types.ts";

const MAX_VERDICTS = 4096;
const MAX_VALUE = 512;

export class HeaderMemo {
  /** By header name, then value (no joined key: decoded Referer parameter names hold anything). */
  readonly #verdicts = new Map<string, Map<string, readonly Finding[]>>();
  #count = 0;

  /** Whether a value is short enough to be remembered. */
  fits(value: string): boolean {
    return value.length <= MAX_VALUE;
  }

  /** The findings judged for this header value before, or undefined. */
  get(name: string, value: string): readonly Finding[] | undefined {
    return this.#verdicts.get(name)?.get(value);
  }

  /** Remembers a verdict; a full memo is emptied first. */
  set(name: string, value: string, findings: readonly Finding[]): void {
    if (this.#count >= MAX_VERDICTS) {
      this.#verdicts.clear();
      this.#count = 0;
    }
    let byValue = this.#verdicts.get(name);
    if (byValue === undefined) this.#verdicts.set(name, byValue = new Map());
    byValue.set(value, findings);
    this.#count++;
  }
}
