import { DatabaseSync } from "node:sqlite";
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { record } from "../../_helpers/records.ts";
import { testStore } from "../../_helpers/store.ts";
import { denoJson } from "../../_helpers/process.ts";
import { createAccessLogRepo } from "../../../db/access_log_repo.ts";
import { createWorkerWriter } from "../../../mod/access_log/worker_writer.ts";
import { lineFormat, rowLines } from "../../../mod/access_log/lines.ts";
import { toRow } from "../../../mod/access_log/record.ts";

const linux = Deno.build.os === "linux";
const WRITER_MODULE = new URL("../../../mod/access_log/worker_writer.ts", import.meta.url).href;

/** The nice value of each of this process's threads, by thread id (Linux). */
function niceByThread(): Map<number, number> {
  const out = new Map<number, number>();
  for (const e of Deno.readDirSync("/proc/self/task")) {
    try {
      const stat = Deno.readTextFileSync(`/proc/self/task/${e.name}/stat`);
      // Fields after the command name (in parentheses, which may hold spaces): the 3rd onwards,
      // so the 19th (nice) is the 17th of these.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(Number(e.name), Number(fields[16]));
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out;
}

/** A batch of `n` fresh rows as text, with their trace ids. */
export function batch(n: number): { lines: string; ids: string[] } {
  const records = Array.from({ length: n }, () => record());
  return {
    lines: records.map((r) => rowLines(toRow(r))).join(""),
    ids: records.map((r) => r.trace_id),
  };
}

Deno.test({
  name: "the writer thread runs at nice 19 on Linux; the main thread's priority is untouched",
  ignore: !linux,
  async fn() {
    await using store = await testStore();
    // In a process of its own: in this one the test files running beside this one start threads
    // too (every test server has an access-log writer at nice 19), so a thread that appeared
    // meanwhile need not be this writer's.
    const code = `
      import { createWorkerWriter } from ${JSON.stringify(WRITER_MODULE)};
      const niceByThread = ${niceByThread.toString()};
      const before = niceByThread();
      const writer = createWorkerWriter(${JSON.stringify(`${store.dir}/waf.db`)});
      // Answered once the thread has handled its "open" (messages are handled in order).
      const written = await writer.writeLines("", { count: 0 });
      const appeared = [...niceByThread()].filter(([tid]) => !before.has(tid));
      const main = niceByThread().get(Deno.pid);
      await writer.close();
      console.log(JSON.stringify({ written, appeared, main }));
    `;
    const { written, appeared, main } = await denoJson<{
      written: number;
      appeared: [number, number][];
      main: number;
    }>(["eval", "--ext=ts", code]);
    assertEquals(written, 0);
    ok(appeared.length > 0, "a thread appeared with the writer");
    assertEquals(appeared.filter(([, nice]) => nice === 19).length, 1, String(appeared));
    assertEquals(main, 0);
  },
});

Deno.test("a writer that falls behind is replaced by a second thread, which takes the writes not begun; every row of every batch is stored once", async () => {
  await using store = await testStore();
  const path = `${store.dir}/waf.db`;
  const repo = createAccessLogRepo(store.db, lineFormat);
  const warnings: unknown[] = [];
  const writer = createWorkerWriter(path, {
    escalateAfterMs: 100,
    onEscalate: (info) => warnings.push(info),
  });
  // Another connection holds the write lock: the writer thread waits on it (its busy timeout).
  const lock = new DatabaseSync(path, { timeout: 5000 });
  lock.exec("BEGIN IMMEDIATE");
  const ids: string[] = [];
  const results: Array<Promise<number>> = [];
  const post = (n: number, defer: boolean) => {
    const b = batch(n);
    ids.push(...b.ids);
    results.push(writer.writeLines(b.lines, { count: n, defer }));
  };
  try {
    post(10, true);
    post(100, true);
    post(5, false);
    for (let i = 0; i < 200 && writer.escalations() === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assertEquals(writer.escalations(), 1);
    assertEquals(warnings.length, 1);
    // Later batches, a prune and a lookup go to the second thread.
    post(7, true);
    post(64, true);
    post(3, false);
    const cursor = writer.startCursor("test", Date.UTC(2026, 0, 1));
    lock.exec("ROLLBACK");
    const counts = await Promise.allSettled(results);
    assertEquals(counts.map((c) => c.status === "fulfilled" ? c.value : String(c.reason)), [
      10,
      100,
      5,
      7,
      64,
      3,
    ]);
    ok((await cursor).cursor >= 0);
    assertEquals(repo.count(), ids.length);
    const stored = new Set(repo.list({ limit: 1000 }).map((r) => r.trace_id));
    assertEquals(stored.size, ids.length);
    ok(ids.every((id) => stored.has(id)));
    // Escalation happens once: a second slow answer does not start a third thread.
    assertEquals(writer.escalations(), 1);
    // The batch the stuck thread had not begun was handed to the second one, not left waiting.
    assertEquals(writer.handedOver(), 1);
  } finally {
    lock.close();
    await writer.close();
  }
  assertEquals(repo.count(), ids.length);
});

Deno.test("a writer that keeps up is never replaced", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  // At normal priority, so other processes' load cannot starve it in this test.
  const writer = createWorkerWriter(`${store.dir}/waf.db`, { low: false, escalateAfterMs: 300 });
  try {
    let total = 0;
    // Past the threshold in all, each request answered well within it.
    for (let i = 0; i < 12; i++) {
      const b = batch(20);
      total += await writer.writeLines(b.lines, { count: 20, defer: i % 2 === 0 });
      await new Promise((r) => setTimeout(r, 40));
    }
    assertEquals(total, 240);
    assertEquals(repo.count(), 240);
    assertEquals(writer.escalations(), 0);
  } finally {
    await writer.close();
  }
});

Deno.test("a reply that waited on a busy main thread does not escalate the writer", async () => {
  await using store = await testStore();
  const writer = createWorkerWriter(`${store.dir}/waf.db`, { low: false, escalateAfterMs: 100 });
  try {
    assertEquals(await writer.writeLines("", { count: 0 }), 0);
    const first = writer.writeLines(batch(5).lines, { count: 5 });
    // The main thread busy past the threshold: the writer answers meanwhile, but the reply waits
    // in this thread's queue while the next request is posted.
    const until = performance.now() + 300;
    while (performance.now() < until) { /* busy */ }
    const second = writer.writeLines(batch(5).lines, { count: 5 });
    assertEquals(await first, 5);
    assertEquals(await second, 5);
    await new Promise((r) => setTimeout(r, 150));
    assertEquals(writer.escalations(), 0);
  } finally {
    await writer.close();
  }
});

Deno.test("an escalated writer that stays calm returns to a low-priority thread, and can escalate again; every row stored once", async () => {
  await using store = await testStore();
  // In a process of its own, for the threads' nice values (see the first test).
  const code = `
    import { DatabaseSync } from "node:sqlite";
    import { createWorkerWriter } from ${JSON.stringify(WRITER_MODULE)};
    import { batch } from ${JSON.stringify(import.meta.url)};
    const linux = Deno.build.os === "linux";
    const niceByThread = linux ? ${niceByThread.toString()} : () => new Map();
    const path = ${JSON.stringify(`${store.dir}/waf.db`)};
    // Escalated after a second, not sooner: the low thread, starved on a loaded machine for a
    // moment, would escalate again before the counts are read.
    const writer = createWorkerWriter(path, { escalateAfterMs: 1000, calmMs: 300 });
    const until = async (done) => {
      for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setTimeout(r, 20));
    };
    let seen = new Set(niceByThread().keys());
    /** The nice values of the threads started since the last call. */
    const fresh = () => {
      const now = niceByThread();
      const out = [...now].filter(([tid]) => !seen.has(tid)).map(([, nice]) => nice);
      seen = new Set(now.keys());
      return out;
    };
    let posted = 0;
    const results = [];
    const post = (n) => {
      posted += n;
      results.push(writer.writeLines(batch(n).lines, { count: n, defer: n % 2 === 0 }));
    };
    const lock = new DatabaseSync(path, { timeout: 5000 });
    const phases = [];
    for (const round of [1, 2]) {
      lock.exec("BEGIN IMMEDIATE");
      post(10);
      post(5);
      await until(() => writer.escalations() === round);
      const up = fresh();
      post(64);
      post(3);
      lock.exec("ROLLBACK");
      await Promise.allSettled(results);
      await until(() => writer.deescalations() === round);
      // Answered by the new thread once it has opened its store.
      post(7);
      await Promise.allSettled(results);
      phases.push({ escalations: writer.escalations(), deescalations: writer.deescalations(), up, down: fresh() });
    }
    await writer.close();
    const settled = await Promise.allSettled(results);
    const count = lock.prepare("SELECT COUNT(*) AS n, COUNT(DISTINCT trace_id) AS d FROM access_logs").get();
    console.log(JSON.stringify({
      linux,
      phases,
      answers: settled.map((s) => s.status === "fulfilled" ? s.value : String(s.reason)),
      posted,
      count,
    }));
  `;
  const r = await denoJson<{
    linux: boolean;
    phases: { escalations: number; deescalations: number; up: number[]; down: number[] }[];
    answers: unknown[];
    posted: number;
    count: { n: number; d: number };
  }>(["eval", "--ext=ts", code]);
  assertEquals(r.phases.map((p) => [p.escalations, p.deescalations]), [[1, 1], [2, 2]]);
  assertEquals(r.answers, [10, 5, 64, 3, 7, 10, 5, 64, 3, 7]);
  assertEquals(r.count, { n: r.posted, d: r.posted });
  if (r.linux) {
    for (const p of r.phases) {
      // The escalated thread, spawned by the main thread, runs at its nice value; the one that
      // takes over again lowers itself to 19.
      ok(p.up.includes(0) && !p.up.includes(19), String(p.up));
      assertEquals(p.down.filter((nice) => nice === 19).length, 1, String(p.down));
    }
  }
});

Deno.test("a writer thread that fails to start at escalation rejects what it was given, leaves the process up, and is started again", async () => {
  await using store = await testStore();
  const repo = createAccessLogRepo(store.db, lineFormat);
  // The writer opens the store through a link that is gone when the second thread starts.
  const link = `${store.dir}-link`;
  Deno.symlinkSync(store.dir, link);
  const errors: unknown[] = [];
  const writer = createWorkerWriter(`${link}/waf.db`, {
    escalateAfterMs: 100,
    onThreadError: (info) => errors.push(info),
  });
  const lock = new DatabaseSync(`${store.dir}/waf.db`, { timeout: 5000 });
  const until = async (done: () => boolean) => {
    for (let i = 0; i < 1000 && !done(); i++) await new Promise((r) => setTimeout(r, 20));
  };
  try {
    assertEquals(await writer.writeLines("", { count: 0 }), 0);
    lock.exec("BEGIN IMMEDIATE");
    const before = batch(10);
    const first = writer.writeLines(before.lines, { count: 10 });
    Deno.removeSync(link);
    await until(() => writer.escalations() === 1);
    assertEquals(writer.escalations(), 1);
    const lost = Promise.allSettled([writer.writeLines(batch(5).lines, { count: 5 })]);
    await until(() => errors.length > 0);
    const [routed] = await lost;
    assertEquals(routed.status, "rejected");
    assertEquals(errors.length, 1);
    Deno.symlinkSync(store.dir, link);
    lock.exec("ROLLBACK");
    assertEquals(await first, 10);
    // Rejected until the restart's wait is over, then written by a new thread.
    const after = batch(3);
    let written: number | undefined;
    for (let i = 0; i < 300 && written === undefined; i++) {
      written = await writer.writeLines(after.lines, { count: 3 }).catch(() => undefined);
      if (written === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    assertEquals(written, 3);
    assertEquals(repo.count(), 13);
    const stored = new Set(repo.list({ limit: 100 }).map((r) => r.trace_id));
    ok([...before.ids, ...after.ids].every((id) => stored.has(id)));
  } finally {
    lock.close();
    await writer.close();
    await Deno.remove(link).catch(() => {});
  }
});

Deno.test("a sink's start asked of a writer thread that is then replaced is before every row written after it was asked", async () => {
  // The start waits in the low thread behind a batch the lock holds up; the escalation hands the
  // next batch to the new thread. Which thread gets the store first once the lock is released is
  // up to SQLite's busy waits, so a few rounds: answered by the old thread after the new one
  // committed, the start was past that batch (the sink never shipped it).
  for (let round = 0; round < 4; round++) {
    await using store = await testStore();
    const path = `${store.dir}/waf.db`;
    const repo = createAccessLogRepo(store.db, lineFormat);
    const writer = createWorkerWriter(path, { escalateAfterMs: 100 });
    const lock = new DatabaseSync(path, { timeout: 5000 });
    try {
      assertEquals(await writer.writeLines(batch(2).lines, { count: 2 }), 2);
      lock.exec("BEGIN IMMEDIATE");
      const before = writer.writeLines(batch(5).lines, { count: 5 });
      const start = writer.startCursor("sink", Date.UTC(2026, 0, 1));
      for (let i = 0; i < 1000 && writer.escalations() === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assertEquals(writer.escalations(), 1);
      const after = batch(3);
      const written = writer.writeLines(after.lines, { count: 3 });
      // The new thread is waiting on the lock too (it opened its store and took the batch).
      await new Promise((r) => setTimeout(r, 300));
      lock.exec("ROLLBACK");
      assertEquals([await before, await written], [5, 3]);
      const { cursor } = await start;
      const rows = repo.readAfter(cursor, 100).rows.map((r) => r.trace_id);
      ok(after.ids.every((id) => rows.includes(id)), `round ${round}: cursor ${cursor}`);
    } finally {
      lock.close();
      await writer.close();
    }
  }
});

Deno.test("a request that itself escalates the writer goes to the new thread and is answered", async () => {
  await using store = await testStore();
  const path = `${store.dir}/waf.db`;
  const repo = createAccessLogRepo(store.db, lineFormat);
  const writer = createWorkerWriter(path, { escalateAfterMs: 100 });
  const lock = new DatabaseSync(path, { timeout: 5000 });
  // The main thread kept busy, so no timer of the writer runs: the requests' own checks escalate.
  const busy = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) { /* busy */ }
  };
  try {
    assertEquals(await writer.writeLines("", { count: 0 }), 0);
    lock.exec("BEGIN IMMEDIATE");
    const first = writer.writeLines(batch(2).lines, { count: 2 });
    busy(200);
    const second = writer.writeLines(batch(2).lines, { count: 2 }); // finds the first late
    busy(150);
    const last = batch(3);
    const third = writer.writeLines(last.lines, { count: 3 }); // confirms it: escalates
    assertEquals(writer.escalations(), 1);
    lock.exec("ROLLBACK");
    let timer: ReturnType<typeof setTimeout> | undefined;
    const unanswered = new Promise((r) => timer = setTimeout(() => r("unanswered"), 30_000));
    const answers = await Promise.race([
      Promise.allSettled([first, second, third]).then((s) =>
        s.map((a) => a.status === "fulfilled" ? a.value : String(a.reason))
      ),
      unanswered,
    ]);
    clearTimeout(timer);
    assertEquals(answers, [2, 2, 3]);
    assertEquals(repo.count(), 7);
  } finally {
    lock.close();
    await writer.close();
  }
});
