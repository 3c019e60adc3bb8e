/**
 * What predicts the data plane's scaling over worker threads (`server.data.workers`), on a
 * machine too small to show the throughput itself (docs/data-plane.md, "Workers: the data plane on
 * every core"; the runs in docs/bench/):
 *
 * 1. `policy`: the cost of getting a policy of 100,000 IP entries and 1,000 custom rules into a
 *    worker: compiling it, cloning its rows (what `postMessage` did with the snapshot), whether
 *    the compiled policy itself could be sent (it cannot: closures and RE2), the IP list alone
 *    compiled from rows against its compiled tables copied and wrapped (what a worker does now),
 *    the lookup on both; `incremental`: the list kept current by changes (one change applied, a
 *    fold, the lookup with changes pending against a full compile and, with `--old-root`, another
 *    tree's list); then `e2e`: a real server with 1, then 2 workers (`--e2e-workers`) and
 *    100,000 entries (`--entries`), an entry added or removed through the API, the time to the
 *    answer, the event loop's longest stall meanwhile, and from the answer until every worker
 *    enforces it; `stall`: the event loop's longest stall per IP-list change, main thread and a
 *    worker, with `--entries 100000,1000000` and `--old-root` (A/B in one process).
 * 2. `cpu`: the WAF as a child process (`deno run main.ts serve`, the shipped V8 flags) with
 *    workers 1, then 2, under the same wrk load: CPU time of the whole process per request (from
 *    `/proc/<pid>/stat`, all threads), the rate, and how the requests spread over the workers
 *    (`waf_data_worker_requests_total` from the metrics).
 *
 * ```sh
 * deno run -A scripts/bench_workers.ts [records|policy|incremental|e2e|stall|cpu|all] [--duration 10]
 *                                      [--connections 16] [--threads 1] [--workers 1,2] [--rounds 3]
 *                                      [--runs 5] [--paced-ms 8] [--e2e-workers 1,2] [--entries 100000]
 *                                      [--old-root DIR] [--probes mix|hit|miss] [--folds 2] [--gap-ms 2]
 *
 * Without `--paced-ms` wrk sends as fast as the WAF answers (closed loop), so the two shapes run
 * at different rates; with it every connection waits between requests and both get the same
 * rate, which keeps a 2-core machine from being oversubscribed by the second worker.
 * ```
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { ensure, freePort } from "./bench_kit.ts";
import { BENIGN, measured, startNginxUpstream, startWaf, wrkScript } from "./bench_proxy.ts";
import type { PolicyObjectRow } from "../db/policy_objects_repo.ts";
import { deltaOf, type PolicySnapshot } from "../mod/data_plane/policy_snapshot.ts";
import { createProtectionCompiler, KIND } from "../mod/protection/protection_compile.ts";
import type { IpList, IpListItem } from "../engine/ip_list.ts";
import { type IpAddress, parseCidr, parseIp } from "../engine/ip_address.ts";
import { type AccessRecord, toRow } from "../mod/access_log/record.ts";
import type { CountsDelta } from "../mod/data_plane/site_counters.ts";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function row(id: string, kind: string, position: number, doc: unknown): PolicyObjectRow {
  return {
    id,
    kind,
    site_id: null,
    position,
    config: JSON.stringify(doc),
    created_at: 0,
    updated_at: 0,
  };
}

/** 100,000 IP entries and 1,000 custom rules, as the protection compiler reads them. */
export function bigSnapshot(version = 1): PolicySnapshot {
  const ips: PolicyObjectRow[] = [];
  for (let i = 0; i < 100_000; i++) {
    const cidr = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}/32`;
    ips.push(row(`ip${i}`, KIND.ip, i, {
      action: i % 10 === 0 ? "allow" : "block",
      cidr,
      site_id: null,
      path_prefix: null,
      expires_at: null,
      note: "",
    }));
  }
  const rules: PolicyObjectRow[] = [];
  for (let i = 0; i < 1_000; i++) {
    rules.push(row(`rule${i}`, KIND.custom, i, {
      name: `rule ${i}`,
      site_id: null,
      target: i % 2 ? { kind: "path" } : { kind: "any_param" },
      pattern: `^/(?:admin|private)${i}/[a-z]+\\d{2,}$`,
      ignore_case: i % 3 === 0,
      action: "block",
      priority: i,
      enabled: true,
    }));
  }
  return {
    version,
    sites: [],
    rows: { [KIND.ip]: ips, [KIND.custom]: rules },
    singletons: {},
    objects: {},
  };
}

function sourceOf(s: PolicySnapshot) {
  return {
    rows: (kind: string) => (s.rows[kind] ?? []) as PolicyObjectRow[],
    singleton: (kind: string) => s.singletons[kind],
  };
}

/** The IP list of a snapshot's rows, compiled as the protection compiler does. */
function compileIpList(s: PolicySnapshot) {
  return createProtectionCompiler()({
    rows: (kind) => kind === KIND.ip ? (s.rows[kind] ?? []) as PolicyObjectRow[] : [],
    singleton: () => undefined,
  }).ipList;
}

/**
 * `match()`'s CPU time per call on each list over `probes` (the process's CPU time, which other
 * work on a shared machine moves far less than the wall clock), seven alternated rounds each
 * (the first ones also warm the JIT up): read the medians.
 */
function matchNs(lists: readonly IpList[], probes: readonly IpAddress[]): number[][] {
  const rounds = lists.map(() => [] as number[]);
  for (let r = 0; r < 7; r++) {
    lists.forEach((l, i) => {
      const t = process.cpuUsage();
      for (let k = 0; k < 200; k++) for (const ip of probes) l.match(ip, "site", "/", 0);
      const { user, system } = process.cpuUsage(t);
      rounds[i]!.push(((user + system) * 1e3) / (200 * probes.length));
    });
  }
  return rounds;
}

async function policyBench(runs: number): Promise<void> {
  // Imported here, so `e2e` alone also runs on a tree from before the compiled IP list (A/B).
  const { ipListOf } = await import("../engine/ip_list.ts");
  const snapshot = bigSnapshot();
  const compileMs: number[] = [];
  const cloneMs: number[] = [];
  const ipCompileMs: number[] = [];
  const tablesMs: number[] = [];
  let tablesBytes = 0;
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    createProtectionCompiler()(sourceOf(snapshot));
    compileMs.push(performance.now() - t0);
    const t1 = performance.now();
    structuredClone(snapshot);
    cloneMs.push(performance.now() - t1);
    const t2 = performance.now();
    const list = compileIpList(snapshot);
    ipCompileMs.push(performance.now() - t2);
    // What a worker pays now for a changed list: the tables' copy, and wrapping them.
    const t3 = performance.now();
    ipListOf(structuredClone(list.state));
    tablesMs.push(performance.now() - t3);
    const t = list.state.base;
    tablesBytes = [t.allow, t.expires, t.bits, t.positions, t.created, t.ids.offsets]
      .concat(t.cidrs.offsets, t.sites.refs, t.prefixes.refs, t.set.payloads)
      .concat([...t.set.v4, ...t.set.v6].flatMap((l) => [l.networks, l.starts]))
      .reduce((n, v) => n + v.byteLength, t.ids.codes.byteLength + t.cidrs.codes.byteLength);
  }
  // A change elsewhere (a site): the same 100,000 rows read again are left out of the message.
  const deltaMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const again = bigSnapshot(i + 2);
    const t0 = performance.now();
    structuredClone(deltaOf(snapshot, again));
    deltaMs.push(performance.now() - t0);
  }
  let transferable = "yes";
  try {
    structuredClone(createProtectionCompiler()(sourceOf(snapshot)));
  } catch (err) {
    transferable = `no (${(err as Error).name})`;
  }
  // The lookup on the list as compiled here and as a worker wraps the copied tables.
  const list = compileIpList(snapshot);
  const copied = ipListOf(structuredClone(list.state));
  const probes = Array.from({ length: 1000 }, (_, i) => parseIp(`10.0.${i & 255}.${i % 7}`)!);
  const [hereNs, copiedNs] = matchNs([list, copied], probes) as [number[], number[]];
  const bytes = JSON.stringify(snapshot).length;
  console.log(
    `policy: 100,000 IP entries + 1,000 custom rules (snapshot ${
      (bytes / 1e6).toFixed(1)
    } MB as JSON), median of ${runs}`,
  );
  console.log(`  compile on the main thread          ${median(compileMs).toFixed(0)} ms`);
  console.log(`  structured clone of the rows        ${median(cloneMs).toFixed(0)} ms`);
  console.log(`  compiled policy cloneable            ${transferable}`);
  console.log(`  unrelated change: delta + clone      ${median(deltaMs).toFixed(1)} ms`);
  console.log(`  IP list alone: compile from rows     ${median(ipCompileMs).toFixed(0)} ms`);
  console.log(
    `  IP list tables: clone + wrap         ${median(tablesMs).toFixed(1)} ms (${
      (tablesBytes / 1e6).toFixed(1)
    } MB of typed arrays and text)`,
  );
  console.log(
    `  IP list match(), 100k entries        ${median(hereNs).toFixed(0)} ns compiled here, ${
      median(copiedNs).toFixed(0)
    } ns on copied tables`,
  );
}

const v4 = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const v6 = (i: number) => `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::`;
/** Entry `i`'s address in `listItem`: 3/4 IPv4, 1/4 IPv6. */
const listAddress = (i: number) => i % 4 === 3 ? v6(i) : v4(i);

/** Entry `i` of a benchmark's IP list: an IPv4 /32 or (one in four) an IPv6 /64, one allow in ten. */
function listItem(i: number): IpListItem {
  const cidr = i % 4 === 3 ? `${v6(i)}/64` : `${v4(i)}/32`;
  return [parseCidr(cidr)!, {
    id: `ip${i}`,
    action: i % 10 === 0 ? "allow" : "block",
    cidr,
    siteId: null,
    pathPrefix: null,
    expiresAt: null,
  }, { position: i, createdAt: 0 }];
}

/**
 * The IP list kept current by changes (`ipListUpdater`, what the main thread does per write)
 * with 100,000 entries: one change applied, a fold of the pending changes into a new base, and
 * `match()` on a list with pending changes against the same entries compiled in full, alternated
 * rounds (hits and misses, IPv4 and IPv6).
 */
async function incrementalBench(runs: number, oldRoot?: string, kind = "mix"): Promise<void> {
  const { buildIpList } = await import("../engine/ip_list.ts");
  const { ipListUpdater } = await import("../mod/protection/ip_list_updater.ts");
  const { pendingLimit } = await import("../engine/ip_list_fold.ts");
  type Item = Parameters<typeof buildIpList>[0][number];
  const n = 100_000;
  const item = listItem;
  const live = new Map<number, Item>();
  for (let i = 0; i < n; i++) live.set(i, item(i));
  const first = [...live.values()];
  // The changes in order (entry number, added or removed), for the other tree's updater.
  const log: Array<[number, boolean]> = [];
  const t0 = performance.now();
  const updater = ipListUpdater([...live.values()]);
  const fullMs = performance.now() - t0;
  const limit = pendingLimit(n);
  // Changes as the API makes them, alternating: an entry added (appended) and one removed.
  const applyMs: number[] = [];
  const foldMs: number[] = [];
  let next = n;
  let gone = 0;
  const change = () => {
    const adding = next - n <= gone;
    const i = adding ? next++ : gone++;
    if (adding) live.set(i, item(i));
    else live.delete(i);
    log.push([i, adding]);
    const base = updater.list.state.base;
    const t = performance.now();
    updater.apply([`ip${i}`], () => live.get(i));
    (updater.list.state.base === base ? applyMs : foldMs).push(performance.now() - t);
  };
  for (let k = 0; k < limit * runs; k++) change();
  // Then a list with half the limit pending, against the same entries compiled in full.
  const pending = () =>
    (updater.list.state.added?.allow.length ?? 0) +
    (updater.list.state.dropped?.length ?? 0);
  while (pending() < limit / 2) change();
  const patched = updater.list;
  const full = buildIpList([...live.values()].sort((a, b) => a[2]!.position - b[2]!.position));
  // `--probes mix`: half hits (live entries, both families), half misses; or all `hit`, `miss`.
  const probes = Array.from({ length: 1000 }, (_, k) => {
    const i = gone + k * 37;
    const miss = k % 4 === 3 ? `2001:db9::${k.toString(16)}` : `11.0.${k & 255}.1`;
    const hit = i % 4 === 3 ? `${listAddress(i)}1` : listAddress(i);
    return parseIp(kind === "miss" || (kind === "mix" && k % 2 === 1) ? miss : hit)!;
  });
  // `--old-root`: the same entries in the IP list of another tree (`git archive` of the commit
  // before), whose `engine/ip_set.ts` held `buildIpList([cidr, entry][])`: the lookup A/B.
  const lists: IpList[] = [full, patched];
  if (oldRoot !== undefined) {
    const root = Deno.realPathSync(oldRoot);
    const sorted = [...live.values()].sort((a, b) => a[2]!.position - b[2]!.position);
    // Trees since the compiled list have `engine/ip_list.ts`; before, `ip_set.ts` held it.
    const old = await import(`${root}/engine/ip_list.ts`).catch(() => undefined);
    lists.push(
      old !== undefined
        ? old.buildIpList(sorted)
        : (await import(`${root}/engine/ip_set.ts`)).buildIpList(sorted.map(([c, e]) => [c, e])),
    );
    // And its list kept current by the same changes, where the tree has one.
    const oldUpdater = await import(`${root}/mod/protection/ip_list_updater.ts`)
      .catch(() => import(`${root}/engine/ip_list_updater.ts`)).catch(() => undefined);
    if (oldUpdater !== undefined) {
      const u = oldUpdater.ipListUpdater(first);
      for (const [i, adding] of log) u.apply([`ip${i}`], () => adding ? item(i) : undefined);
      lists.push(u.list);
    }
  }
  const [fullNs, patchedNs, oldNs, oldPatchedNs] = matchNs(lists, probes);
  console.log(
    `IP list kept current: ${
      n.toLocaleString("en")
    } entries (3/4 IPv4 /32, 1/4 IPv6 /64), ${limit} changes pending at most`,
  );
  console.log(`  full build                           ${fullMs.toFixed(0)} ms`);
  console.log(
    `  one change applied                   ${median(applyMs).toFixed(2)} ms (max ${
      Math.max(...applyMs).toFixed(2)
    }, ${applyMs.length} changes)`,
  );
  console.log(
    `  fold into a new base                 ${median(foldMs).toFixed(0)} ms (max ${
      Math.max(...foldMs).toFixed(0)
    }, ${foldMs.length} folds)`,
  );
  console.log(
    `  match() CPU (${kind}), ${pending()} changes pending ${
      median(patchedNs!).toFixed(0)
    } ns, compiled in full ${median(fullNs!).toFixed(0)} ns${
      oldNs ? `, the old tree's list ${median(oldNs).toFixed(0)} ns` : ""
    }${oldPatchedNs ? ` (with the changes pending ${median(oldPatchedNs).toFixed(0)} ns)` : ""}`,
  );
}

/** The data-plane worker's part of `stallBench`: applies each delta, probes its own loop. */
const STALL_WORKER = `
let held, list, ipListOf, applyDelta;
let worst = 0, last = performance.now(), on = true;
const tick = () => {
  const now = performance.now();
  worst = Math.max(worst, now - last);
  last = now;
  if (on) setTimeout(tick, 1);
};
const handled = [];
const cpu = [];
// This thread's CPU time (ns in /proc/thread-self/schedstat): the work, not the waits for a core.
const cpuMs = () => Number(Deno.readTextFileSync("/proc/thread-self/schedstat").split(" ")[0]) / 1e6;
self.onmessage = async (e) => {
  const m = e.data;
  if (m.t === "init") {
    ({ ipListOf } = await import(m.root + "/engine/ip_list.ts"));
    ({ applyDelta } = await import(m.root + "/mod/data_plane/policy_snapshot.ts"));
    held = m.snapshot;
    list = ipListOf(held.ipList);
    self.postMessage({ t: "ready" });
    return;
  }
  if (m.t === "probe") {
    worst = 0;
    last = performance.now();
    setTimeout(tick, 1);
    self.postMessage({ t: "probing" });
    return;
  }
  if (m.t === "delta") {
    const t = performance.now();
    const c = cpuMs();
    held = applyDelta(held, m.delta);
    list = ipListOf(held.ipList);
    cpu.push(cpuMs() - c);
    handled.push(performance.now() - t);
    if (m.last) {
      on = false;
      tick();
      self.postMessage({ t: "done", handled, cpu, worst, size: list.size });
    }
  }
};
`;

/**
 * The event loop's stall per IP-list change, A/B in one process: each side's updater (this
 * tree, and `--old-root` when given) keeps `entries` entries current through changes arriving
 * every `gapMs` (an entry added, one removed, alternately), enough for `--folds` folds; every
 * change's delta goes by `postMessage` to a worker holding the list as a data-plane worker does.
 * Per change: the main thread's synchronous time (apply, delta, `postMessage`) and the worker's
 * handler, in wall time and in the thread's CPU time (the wall time on a loaded machine includes
 * waiting for a core), and on each thread a 1 ms timer's longest gap over the run (every other
 * stall: a message's deserialising, a collection, the waits for a core).
 */
async function stallBench(
  entries: number,
  rounds: number,
  folds: number,
  oldRoot?: string,
  gapMs = 2,
): Promise<void> {
  const sides: Array<[string, string]> = [["B", Deno.realPathSync(new URL("..", import.meta.url))]];
  if (oldRoot !== undefined) sides.unshift(["A", Deno.realPathSync(oldRoot)]);
  const script = await Deno.makeTempFile({ prefix: "waf-stall-worker-", suffix: ".js" });
  await Deno.writeTextFile(script, STALL_WORKER);
  const results = new Map<string, Array<Record<string, number>>>();
  try {
    for (let round = 0; round < rounds; round++) {
      for (const [side, root] of sides) {
        const r = await stallRound(root, entries, folds, gapMs, script);
        results.set(side, [...results.get(side) ?? [], r]);
        console.log(
          `  round ${round + 1} ${side}: ${
            Object.entries(r).map(([k, v]) => `${k} ${v.toFixed(k === "folds" ? 0 : 2)}`)
              .join(", ")
          } (load ${Deno.loadavg()[0]!.toFixed(2)})`,
        );
      }
    }
  } finally {
    await Deno.remove(script);
  }
  console.log(
    `stall per IP-list change, ${
      entries.toLocaleString("en")
    } entries, a change every ${gapMs} ms` +
      `, medians of ${rounds} rounds (ms):`,
  );
  for (const [side, rs] of results) {
    const keys = Object.keys(rs[0]!);
    console.log(
      `  ${side}: ${keys.map((k) => `${k} ${median(rs.map((x) => x[k]!)).toFixed(2)}`).join(", ")}`,
    );
  }
}

/** This thread's CPU time: the work, not the waits for a core (ns in `schedstat`). */
const threadCpuMs = () =>
  Number(Deno.readTextFileSync("/proc/thread-self/schedstat").split(" ")[0]) / 1e6;

/** One side's run of {@link stallBench}. */
async function stallRound(
  root: string,
  entries: number,
  folds: number,
  gapMs: number,
  script: string,
): Promise<Record<string, number>> {
  // Trees since the fold thread moved to `mod/protection/` hold the updater there too.
  const { ipListUpdater } = await import(`${root}/mod/protection/ip_list_updater.ts`)
    .catch(() => import(`${root}/engine/ip_list_updater.ts`));
  // The pending limit is the engine's fold's since the move (before, the updater's).
  const fold = await import(`${root}/engine/ip_list_fold.ts`).catch(() => undefined);
  const { pendingLimit } = fold?.pendingLimit
    ? fold
    : await import(`${root}/engine/ip_list_updater.ts`);
  const { deltaOf } = await import(`${root}/mod/data_plane/policy_snapshot.ts`);
  // This tree folds on a thread of its own (as the server does); a tree before, in `apply`.
  // Since the move the fold thread is an object (`IpListFoldThread`); before, module functions.
  const threadModule = await import(`${root}/mod/protection/ip_list_fold_thread.ts`)
    .catch(() => import(`${root}/engine/ip_list_fold.ts`)).catch(() => undefined);
  const offThread = threadModule?.IpListFoldThread
    ? new threadModule.IpListFoldThread()
    : threadModule?.foldOffThread &&
      { offThread: threadModule.foldOffThread, settled: threadModule.foldsSettled };
  // Which entries are live (a bit each; items made on demand): the server keeps no item per
  // entry on its heap either, and 1,000,000 of them would make every collection here longer.
  const live = new Uint8Array(entries * 2).fill(1, 0, entries);
  let size = entries;
  const updater = ipListUpdater(
    Array.from({ length: entries }, (_, i) => listItem(i)),
    offThread?.offThread,
  );
  const empty = { sites: [], rows: {}, singletons: {}, objects: {} };
  const snapshot = (version: number): PolicySnapshot => ({
    ...empty,
    version,
    ipList: updater.list.state,
  });
  let sent = snapshot(1);
  const worker = new Worker(new URL(`file://${script}`), { type: "module" });
  const answer = <T>(t: string) =>
    new Promise<T>((resolve) => {
      worker.onmessage = (e) => e.data.t === t && resolve(e.data);
    });
  try {
    let ready = answer("ready");
    worker.postMessage({ t: "init", root, snapshot: sent });
    await ready;
    ready = answer("probing");
    worker.postMessage({ t: "probe" });
    await ready;
    const changes = Math.ceil(pendingLimit(entries) * (folds + 0.5));
    const main: number[] = [];
    const mainCpu: number[] = [];
    let bases = 0;
    let next = entries;
    let gone = 0;
    const done = answer<{ handled: number[]; cpu: number[]; worst: number; size: number }>(
      "done",
    );
    const { stallMs } = await loopStall(async () => {
      for (let k = 0; k < changes; k++) {
        await new Promise((r) => setTimeout(r, gapMs));
        const adding = k % 2 === 0;
        const i = adding ? next++ : gone++;
        live[i] = adding ? 1 : 0;
        size += adding ? 1 : -1;
        const t = performance.now();
        const c = threadCpuMs();
        const base = updater.list.state.base;
        updater.apply([`ip${i}`], () => live[i] ? listItem(i) : undefined);
        if (updater.list.state.base !== base) bases++;
        const now = snapshot(k + 2);
        worker.postMessage({ t: "delta", delta: deltaOf(sent, now), last: k === changes - 1 });
        sent = now;
        mainCpu.push(threadCpuMs() - c);
        main.push(performance.now() - t);
      }
    });
    const w = await done;
    if (w.size !== size) throw new Error(`the worker holds ${w.size}, not ${size}`);
    await offThread?.settled();
    return {
      folds: bases,
      "main median": median(main),
      "main max": Math.max(...main),
      "main max cpu": Math.max(...mainCpu),
      "main loop max gap": stallMs,
      "worker median": median(w.handled),
      "worker max": Math.max(...w.handled),
      "worker max cpu": Math.max(...w.cpu),
      "worker loop max gap": w.worst,
    };
  } finally {
    worker.terminate();
    await offThread?.stop?.();
  }
}

/**
 * The event loop's longest stall while `during` runs: a timer re-armed every millisecond notes
 * the largest gap between two of its runs (a blocked loop delays it).
 */
async function loopStall<T>(during: () => Promise<T>): Promise<{ result: T; stallMs: number }> {
  let last = performance.now();
  let worst = 0;
  let on = true;
  const tick = () => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
    if (on) setTimeout(tick, 1);
  };
  setTimeout(tick, 1);
  try {
    const result = await during();
    tick();
    return { result, stallMs: worst };
  } finally {
    on = false;
  }
}

/**
 * End to end on a real server with `workers` data-plane workers and 100,000 IP entries: an
 * IP-list entry added or removed through the API; how long the write takes to be answered (the
 * main thread applies the change before answering), the event loop's longest stall meanwhile
 * (with 1 worker the data plane runs on that loop), and then until every worker acknowledges the
 * version (enforcing).
 */
async function policyEndToEnd(runs: number, workerCount: number, entries = 100_000) {
  const { startTestServer } = await import("../tests/_helpers/server.ts");
  const { apiFor, seedIpEntries } = await import("../tests/_helpers/protection.ts");
  await using s = await startTestServer({ config: { server: { data: { workers: workerCount } } } });
  const workers = s.dataWorkers;
  const everyWorker = async () => {
    while (workers && !workers.current()) await new Promise((r) => setTimeout(r, 1));
  };
  const t0 = performance.now();
  seedIpEntries(s, entries);
  await everyWorker();
  const seeded = performance.now() - t0;
  const api = apiFor(s);
  const ackMs: number[] = [];
  const stallMs: number[] = [];
  const enforceMs: number[] = [];
  const rssMb = () => Deno.memoryUsage().rss / 1e6;
  for (let i = 0; i < runs; i++) {
    for (const method of ["POST", "DELETE"]) {
      const start = performance.now();
      const { result: r, stallMs: stall } = await loopStall(() =>
        method === "POST"
          ? api("POST", "/api/protection/ip-lists", {
            action: "block",
            cidr: `198.51.${100 + (i >> 8)}.${i & 255}/32`,
            site_id: null,
          })
          : api("DELETE", `/api/protection/ip-lists/seed-ip-${i}`)
      );
      await r.body?.cancel();
      if (r.status >= 300) throw new Error(`${method} answered ${r.status}`);
      const acked = performance.now();
      await everyWorker();
      ackMs.push(acked - start);
      stallMs.push(stall);
      enforceMs.push(performance.now() - acked);
    }
  }
  const line = (label: string, xs: number[]) =>
    console.log(`  ${label} ${median(xs).toFixed(1)} ms (max ${Math.max(...xs).toFixed(1)})`);
  console.log(
    `end to end, ${workerCount} worker(s), ${entries.toLocaleString("en")} IP entries (${
      runs * 2
    } changes, median; ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")} load; seeding ${
      seeded.toFixed(0)
    } ms; RSS ${rssMb().toFixed(0)} MB)`,
  );
  line("write answered                       ", ackMs);
  line("longest event-loop stall in the write", stallMs);
  if (workers) line("answered -> every worker enforcing   ", enforceMs);
}

/** A benign request's record as the transaction leaves it (a protected site, six checks). */
function benignRecord(i: number): AccessRecord {
  const checks = ["site", "client", "ip_list", "acl", "bot", "rate_limit", "engine", "upstream"];
  return {
    trace_id: (0x1000000 + i).toString(16).padStart(32, "0"),
    time: Date.now(),
    site_id: "0b6f3c6e-8a52-4f7e-9d0c-2f3e4a5b6c7d",
    site: "on",
    client_ip: "127.0.0.1",
    peer_ip: "127.0.0.1",
    proto: "http",
    method: "GET",
    host: "on.bench",
    path: `/products/${i % 500}`,
    query: "id=42&sort=price&page=2",
    user_agent: "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0",
    status: 200,
    action: "pass",
    chain: checks.map((check) => ({ check, result: check === "site" ? "match" : "pass", us: 3 })),
    finding: null,
    findings: 0,
    upstream: "http://127.0.0.1:8081",
    bytes_in: 0,
    bytes_out: 612,
    latency_us: { total: 950, waf: 120, upstream: 830 },
  };
}

/**
 * The records' trip from a worker to the writer thread, per record, split by thread, for the
 * first design (records by structured clone to the main thread, which counted them, built the
 * rows and cloned those to the writer) and this one (rows built and joined into one string in
 * the worker, counts as per-site deltas, the string passed on as it is and parsed by the
 * writer). `node:v8`'s serialiser is the one `postMessage` uses; batches of 64, as under load.
 */
async function recordsBench(runs: number): Promise<void> {
  const v8 = await import("node:v8");
  const { rowLines, parseRowLines } = await import("../mod/access_log/lines.ts");
  const { SiteCounterSet, takeCounts, addCounts } = await import(
    "../mod/data_plane/site_counters.ts"
  );
  const N = 64;
  const batches = 300;
  const records = Array.from({ length: N * batches }, (_, i) => benignRecord(i));
  const workerSet = new SiteCounterSet();
  const mainSet = new SiteCounterSet();
  const old = { worker: [] as number[], main: [] as number[], writer: [] as number[] };
  const now = { worker: [] as number[], main: [] as number[], writer: [] as number[] };
  const per = (ms: number) => (ms * 1000) / records.length;
  for (let r = 0; r < runs; r++) {
    // First design.
    let w = 0, m = 0, wr = 0;
    for (let b = 0; b < batches; b++) {
      const batch = records.slice(b * N, (b + 1) * N);
      const t0 = performance.now();
      // The worker's transaction counted in its own set then too (unread).
      for (const rec of batch) {
        workerSet.forSite(rec.site_id!, rec.site!).count(rec, rec.latency_us.total, null);
      }
      const wire = v8.serialize({ t: "records", records: batch });
      const t1 = performance.now();
      const got = v8.deserialize(wire) as { records: AccessRecord[] };
      const rows = [];
      for (const rec of got.records) {
        const c = mainSet.forSite(rec.site_id!, rec.site!);
        c.count(rec, rec.latency_us.total, rec.latency_us.upstream);
        for (const e of rec.chain) if (e.check === "engine") c.inspection.observe(e.us);
        rows.push(toRow(rec));
      }
      const toWriter = v8.serialize({ kind: "write", id: b, rows });
      const t2 = performance.now();
      v8.deserialize(toWriter);
      const t3 = performance.now();
      w += t1 - t0;
      m += t2 - t1;
      wr += t3 - t2;
    }
    old.worker.push(per(w));
    old.main.push(per(m));
    old.writer.push(per(wr));
    // This design.
    w = m = wr = 0;
    for (let b = 0; b < batches; b++) {
      const batch = records.slice(b * N, (b + 1) * N);
      const t0 = performance.now();
      const lines: string[] = [];
      for (const rec of batch) {
        workerSet.forSite(rec.site_id!, rec.site!).count(rec, rec.latency_us.total, null);
        lines.push(rowLines(toRow(rec)));
      }
      const wire = v8.serialize({
        t: "records",
        lines: lines.join(""),
        count: lines.length,
        events: [],
        counts: takeCounts(workerSet),
        alap: [],
        samples: [],
      });
      const t1 = performance.now();
      const got = v8.deserialize(wire) as { lines: string; counts: CountsDelta[] };
      addCounts(mainSet, got.counts);
      const toWriter = v8.serialize({ kind: "write", id: b, lines: got.lines, defer: true });
      const t2 = performance.now();
      parseRowLines((v8.deserialize(toWriter) as { lines: string }).lines);
      const t3 = performance.now();
      w += t1 - t0;
      m += t2 - t1;
      wr += t3 - t2;
    }
    now.worker.push(per(w));
    now.main.push(per(m));
    now.writer.push(per(wr));
  }
  const line = (name: string, x: typeof old) =>
    console.log(
      `  ${name} worker ${median(x.worker).toFixed(2)}, main ${median(x.main).toFixed(2)}, writer ${
        median(x.writer).toFixed(2)
      }, total ${(median(x.worker) + median(x.main) + median(x.writer)).toFixed(2)} µs/record`,
    );
  console.log(`records: a benign record's trip to the writer, batches of ${N}, median of ${runs}`);
  line("records cloned (first design): ", old);
  line("rows as text, counts as deltas:", now);
  console.log(
    "  (the worker's part includes the counting its transaction does in both designs, and" +
      " toRow, which the main thread does with one worker)",
  );
}

async function startWafWith(dir: string, upstream: string, workers: number) {
  const dataPort = freePort();
  const mgmtPort = freePort();
  const child = await startWaf(
    dir,
    upstream,
    dataPort,
    mgmtPort,
    String(workers),
    [],
    undefined,
    { extra: "monitor:\n  prometheus:\n    public: true\n" },
  );
  // Workers listen before the process is ready; wait for every worker to be serving.
  for (let i = 0; i < 300; i++) {
    const r = await fetch(`http://127.0.0.1:${mgmtPort}/health/ready`).catch(() => undefined);
    await r?.body?.cancel();
    if (r?.status === 200) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  return { child, dataPort, mgmtPort };
}

/** CPU ticks per thread of `pid`, by thread id (with its name). */
function threadTicks(pid: number): Map<string, { name: string; ticks: number }> {
  const out = new Map<string, { name: string; ticks: number }>();
  for (const e of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const stat = Deno.readTextFileSync(`/proc/${pid}/task/${e.name}/stat`);
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const f = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
      out.set(e.name, { name, ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** The CPU time each thread used between two samples, µs per request, busiest first. */
function threadShare(
  pid: number,
  a: Map<string, { name: string; ticks: number }>,
  b: Map<string, { name: string; ticks: number }>,
  requests: number,
): string {
  const rows: Array<[string, number]> = [];
  for (const [tid, t] of b) {
    const us = ((t.ticks - (a.get(tid)?.ticks ?? 0)) * 10_000) / Math.max(1, requests);
    if (us >= 1) rows.push([tid === String(pid) ? "main" : t.name, us]);
  }
  return rows.sort((x, y) => y[1] - x[1]).map(([n, us]) => `${n} ${us.toFixed(0)}`).join(", ");
}

async function perWorker(mgmtPort: number): Promise<number[]> {
  const text = await (await fetch(`http://127.0.0.1:${mgmtPort}/metrics`)).text();
  return [...text.matchAll(/^waf_data_worker_requests_total\{worker="(\d+)"\} (\d+)/gm)]
    .map((m) => Number(m[2]));
}

async function cpuBench(
  workerCounts: number[],
  opts: {
    duration: number;
    connections: number;
    threads: number;
    rounds: number;
    /** Each connection waits this long between requests: the same rate for every worker count. */
    pacedMs?: number;
  },
): Promise<void> {
  await ensure("wrk", "wrk");
  await ensure("nginx", "nginx-light");
  const dir = await Deno.makeTempDir({ prefix: "waf-bench-workers-" });
  const upPort = freePort();
  const upstream = await startNginxUpstream(dir, upPort);
  try {
    const script = wrkScript(BENIGN, "on.bench", opts.pacedMs);
    const cpu = new Map<number, number[]>();
    // Rounds alternate the worker counts, so a change in the machine's load hits both alike.
    const order = Array.from({ length: opts.rounds }, () => workerCounts).flat();
    for (const [round, n] of order.entries()) {
      const waf = await startWafWith(`${dir}/r${round}`, `http://127.0.0.1:${upPort}`, n);
      try {
        const url = `http://127.0.0.1:${waf.dataPort}`;
        // Warm-up: JIT, upstream pools; then the measured run.
        await measured(waf.child.pid, dir, url, script, { ...opts, duration: 3 });
        const before = n > 1 ? await perWorker(waf.mgmtPort) : [];
        const threadsBefore = threadTicks(waf.child.pid);
        const r = await measured(waf.child.pid, dir, url, script, opts);
        cpu.set(n, [...cpu.get(n) ?? [], r.cpuUs!]);
        const rss = /VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync(`/proc/${waf.child.pid}/status`));
        const threads = threadShare(
          waf.child.pid,
          threadsBefore,
          threadTicks(waf.child.pid),
          r.requests,
        );
        await new Promise((res) => setTimeout(res, 300));
        const after = n > 1 ? await perWorker(waf.mgmtPort) : [];
        const spread = after.map((a, i) => a - (before[i] ?? 0));
        const total = spread.reduce((a, b) => a + b, 0);
        console.log(
          `workers ${n}: ${r.rps.toFixed(0)} req/s, cpu ${r.cpuUs!.toFixed(1)} µs/req, p50 ${
            r.p50.toFixed(2)
          } ms, p99 ${r.p99.toFixed(2)} ms, non-2xx ${r.non2xx}/${r.requests}${
            total > 0
              ? `, per worker ${spread.map((x) => `${(100 * x / total).toFixed(0)}%`).join(" / ")}`
              : ""
          }, RSS ${(Number(rss?.[1] ?? 0) / 1024).toFixed(0)} MB\n  µs/req by thread: ${threads}`,
        );
      } finally {
        waf.child.kill("SIGTERM");
        await waf.child.status;
      }
    }
    const base = median(cpu.get(workerCounts[0]!)!);
    for (const [n, xs] of cpu) {
      console.log(
        `median cpu, workers ${n}: ${median(xs).toFixed(1)} µs/req (${
          (100 * (median(xs) / base - 1)).toFixed(1)
        }% against workers ${workerCounts[0]}; runs ${xs.map((x) => x.toFixed(0)).join(", ")})`,
      );
    }
  } finally {
    upstream.kill("SIGTERM");
    await upstream.status;
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

export async function main(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      duration: { type: "string", default: "10" },
      connections: { type: "string", default: "16" },
      threads: { type: "string", default: "1" },
      workers: { type: "string", default: "1,2" },
      runs: { type: "string", default: "5" },
      rounds: { type: "string", default: "3" },
      "paced-ms": { type: "string" },
      "e2e-workers": { type: "string" },
      entries: { type: "string", default: "100000" },
      "old-root": { type: "string" },
      probes: { type: "string", default: "mix" },
      folds: { type: "string", default: "2" },
      "gap-ms": { type: "string", default: "2" },
    },
  });
  const what = positionals[0] ?? "all";
  console.log(
    `load: ${
      Deno.loadavg().map((x) => x.toFixed(2)).join(" ")
    }, cores: ${navigator.hardwareConcurrency}`,
  );
  if (what === "records" || what === "all") await recordsBench(Number(values.runs));
  if (what === "policy" || what === "all") await policyBench(Number(values.runs));
  if (what === "policy" || what === "incremental" || what === "all") {
    await incrementalBench(Number(values.runs), values["old-root"], values.probes);
  }
  if (what === "stall") {
    for (const n of values.entries.split(",")) {
      await stallBench(
        Number(n),
        Number(values.rounds),
        Number(values.folds),
        values["old-root"],
        Number(values["gap-ms"]),
      );
    }
  }
  if (what === "policy" || what === "e2e" || what === "all") {
    for (const n of (values["e2e-workers"] ?? "1,2").split(",")) {
      await policyEndToEnd(Number(values.runs), Number(n), Number(values.entries.split(",")[0]));
    }
  }
  if (what === "cpu" || what === "all") {
    await cpuBench(values.workers.split(",").map(Number), {
      duration: Number(values.duration),
      connections: Number(values.connections),
      threads: Number(values.threads),
      rounds: Number(values.rounds),
      pacedMs: values["paced-ms"] === undefined ? undefined : Number(values["paced-ms"]),
    });
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
