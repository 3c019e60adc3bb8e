/**
 * Run as a process of its own by tests/routes/proxy/body_encoding_test.ts: a data plane (strict,
 * 8 MiB bodies) answers four gzip bombs of 1 GiB decoded each, and this process prints, as one JSON
 * line, the statuses and how far its peak resident memory (VmHWM) grew meanwhile. Alone in its
 * process, the figure is the data plane's: in the test runner's process the other test files that
 * run beside it move the memory by tens of MB either way.
 */
import * as zlib from "node:zlib";
import { hostFetch } from "./data_client.ts";
import { startTestServer } from "./server.ts";
import { siteInput, SYSTEM } from "./sites.ts";

/** The process's peak resident memory in bytes (VmHWM). */
function peakRss(): number {
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(Deno.readTextFileSync("/proc/self/status"))?.[1];
  if (kb === undefined) throw new Error("no VmHWM in /proc/self/status");
  return Number(kb) * 1024;
}

// 64 gzip members of 16 MiB of zeros each: 1 GiB decoded (gzip decoders read every member).
const member = new Uint8Array(zlib.gzipSync(new Uint8Array(16 * 1024 * 1024), { level: 9 }));
const bomb = new Uint8Array(member.length * 64);
for (let i = 0; i < 64; i++) bomb.set(member, i * member.length);

await using s = await startTestServer();
s.dataPlane.sites.create(
  siteInput({ max_body_bytes: 8 * 1024 * 1024, level: "strict" }),
  SYSTEM,
);
const headers = { "content-type": "application/octet-stream", "content-encoding": "gzip" };
// One request first, so what every first request loads (code, pools) counts as before.
const warm = await hostFetch(`${s.dataUrl}/api/search`, "shop.test", {
  method: "POST",
  body: "{}",
  headers: { "content-type": "application/json" },
});
await warm.body?.cancel();
const before = peakRss();
const statuses: number[] = [];
for (let i = 0; i < 4; i++) {
  const r = await hostFetch(`${s.dataUrl}/api/search`, "shop.test", {
    method: "POST",
    body: bomb,
    headers,
  });
  await r.body?.cancel();
  statuses.push(r.status);
}
console.log(JSON.stringify({ bomb: bomb.length, statuses, grown: peakRss() - before }));
