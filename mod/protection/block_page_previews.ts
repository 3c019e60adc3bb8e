/**
 * Rendered block-page previews kept briefly in memory, so the console can show a draft in an
 * iframe loaded from a URL: a document served with its own script-free, sandboxed CSP (a
 * `srcdoc` or blob iframe would inherit the console's CSP, which blocks the page's inline
 * styles). Each preview belongs to the principal that made it and expires after `ttlMs`.
 */
import type { Clock } from "../core/clock.ts";
import { type Random, randomHex } from "../core/random.ts";

interface Entry {
  readonly owner: string;
  readonly html: string;
  readonly expiresAt: number;
}

export function createBlockPagePreviews(
  deps: { clock: Clock; random: Random },
  options: { ttlMs?: number; max?: number } = {},
) {
  const ttl = options.ttlMs ?? 10 * 60_000;
  const max = options.max ?? 50;
  const entries = new Map<string, Entry>();
  const sweep = (now: number) => {
    for (const [id, e] of entries) if (e.expiresAt <= now) entries.delete(id);
  };
  return {
    /** Keeps `html` for `owner`; the oldest preview goes when the store is full. */
    put(owner: string, html: string): { id: string; expiresAt: number } {
      const now = deps.clock.now();
      sweep(now);
      if (entries.size >= max) entries.delete(entries.keys().next().value!);
      const id = randomHex(deps.random);
      const expiresAt = now + ttl;
      entries.set(id, { owner, html, expiresAt });
      return { id, expiresAt };
    },
    /** The preview `id` of `owner`, while it has not expired. */
    get(owner: string, id: string): string | undefined {
      const e = entries.get(id);
      if (!e || e.owner !== owner || e.expiresAt <= deps.clock.now()) return undefined;
      return e.html;
    },
  };
}

export type BlockPagePreviews = ReturnType<typeof createBlockPagePreviews>;
