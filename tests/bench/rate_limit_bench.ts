/** Per-request cost of the sliding-window limiter, against a bare `Map` counter increment. */
import { createRateLimiter } from "../../engine/rate_limit.ts";

const keys = Array.from({ length: 10_000 }, (_, i) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
const map = new Map<string, number>();
const limiter = createRateLimiter({ requests: 1e9, windowMs: 1000, burst: 0 });
const capped = createRateLimiter({ requests: 1e9, windowMs: 1000, burst: 0, maxKeys: 1000 });
let i = 0;
let now = 1_000_000_000;

Deno.bench("baseline: Map<string, number> increment", { group: "rate", baseline: true }, () => {
  const k = keys[i++ % keys.length]!;
  map.set(k, (map.get(k) ?? 0) + 1);
});
Deno.bench("sliding-window hit, 10k active keys", { group: "rate" }, () => {
  limiter.hit(keys[i++ % keys.length]!, now++);
});
Deno.bench("sliding-window hit at the key cap (evicting)", { group: "rate" }, () => {
  capped.hit(keys[i++ % keys.length]!, now++);
});
