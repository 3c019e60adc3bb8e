/**
 * The controller's policy watch and the node's side of it, with timers the tests move: answered
 * at once when the node's version is not current, on the next swap that changes the version, or
 * with "no change" after the wait; one waiting request per node, a cap per controller, all of them
 * answered on close. The node follows a changed version, and falls back to the heartbeat when the
 * controller has no watch (404) or the watch fails.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { FakeTimers } from "../../_helpers/fake_timers.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { PolicyWatch, WATCH_WAIT_MS } from "../../../mod/cluster/policy_watch.ts";
import {
  FAILING_MAX_DELAY_MS,
  NodeWatch,
  UNSUPPORTED_RETRY_MS,
} from "../../../mod/cluster/node_watch.ts";
import type { ControllerAnswer, ControllerClient } from "../../../mod/cluster/controller_client.ts";

function hub(max?: number) {
  const timers = new FakeTimers();
  let version = "v1";
  const watch = new PolicyWatch({
    current: () => version,
    logger: createMemoryLogger(),
    timers,
    max,
  });
  return {
    timers,
    watch,
    set: (v: string) => (version = v),
  };
}

/** Whether `p` has settled after the pending reactions ran. */
async function settled<T>(p: Promise<T>): Promise<T | "pending"> {
  return await Promise.race([p, new Promise<"pending">((r) => setTimeout(() => r("pending"), 0))]);
}

Deno.test("PolicyWatch.wait() answers at once when the node's version is not the current one", async () => {
  const { watch } = hub();
  assertEquals(await watch.wait("n1", "v0"), {
    kind: "answer",
    changed: true,
    policy_version: "v1",
  });
  assertEquals(await watch.wait("n1", ""), { kind: "answer", changed: true, policy_version: "v1" });
  assertEquals(watch.size, 0);
});

Deno.test("PolicyWatch answers a waiting node on the swap that changes the version, not on others", async () => {
  const { watch, timers, set } = hub();
  const waiting = watch.wait("n1", "v1");
  // A swap that leaves the version as it was does not answer.
  watch.changed();
  await timers.tick(100);
  assertEquals(await settled(waiting), "pending");
  set("v2");
  watch.changed();
  watch.changed();
  await timers.tick(100);
  assertEquals(await waiting, { kind: "answer", changed: true, policy_version: "v2" });
  assertEquals([watch.size, timers.pending], [0, 0]);
});

Deno.test("PolicyWatch answers 'no change' after the wait", async () => {
  const { watch, timers } = hub();
  const waiting = watch.wait("n1", "v1");
  await timers.tick(WATCH_WAIT_MS - 1);
  assertEquals(await settled(waiting), "pending");
  await timers.tick(1);
  assertEquals(await waiting, { kind: "answer", changed: false, policy_version: "v1" });
  assertEquals(timers.pending, 0);
});

Deno.test("PolicyWatch keeps one waiting request per node and at most its cap", async () => {
  const { watch, timers } = hub(2);
  const first = watch.wait("n1", "v1");
  const second = watch.wait("n1", "v1");
  assertEquals(await first, { kind: "answer", changed: false, policy_version: "v1" });
  assertEquals(watch.size, 1);
  const other = watch.wait("n2", "v1");
  assertEquals(await watch.wait("n3", "v1"), { kind: "busy" });
  assertEquals(watch.size, 2);
  // The node that went away stops waiting.
  const gone = new AbortController();
  const third = watch.wait("n1", "v1", gone.signal);
  assertEquals((await second as { changed: boolean }).changed, false);
  gone.abort();
  assertEquals(await third, { kind: "answer", changed: false, policy_version: "v1" });
  assertEquals(watch.size, 1);
  watch.close();
  assertEquals(await other, { kind: "answer", changed: false, policy_version: "v1" });
  assertEquals(await watch.wait("n2", "v1"), { kind: "closed" });
  assertEquals([watch.size, timers.pending], [0, 0]);
});

/** A controller client answering the watch path from `answers`, in order. */
function stubClient(answers: (ControllerAnswer | Error)[]) {
  const paths: string[] = [];
  const client = {
    request(_method: string, path: string): Promise<ControllerAnswer> {
      paths.push(path);
      const next = answers.shift() ?? new Error("no more answers");
      return next instanceof Error ? Promise.reject(next) : Promise.resolve(next);
    },
  } as unknown as ControllerClient;
  return { client, paths };
}

function nodeWatch(answers: (ControllerAnswer | Error)[], followOk = true) {
  const { client, paths } = stubClient(answers);
  const followed: string[] = [];
  let version: string | null = "v1";
  const logger = createMemoryLogger();
  const watch = new NodeWatch({
    nodeId: "0123456789abcdef",
    logger,
    intervalMs: 5000,
    client: () => client,
    version: () => version,
    follow: (v) => {
      followed.push(v);
      if (followOk) version = v;
      return Promise.resolve(followOk);
    },
    timers: new FakeTimers(),
  });
  return { watch, paths, followed, logger };
}

Deno.test("NodeWatch.once() follows a changed version and asks again at once", async () => {
  const { watch, paths, followed } = nodeWatch([
    { status: 200, body: { changed: true, policy_version: "v2" } },
    { status: 200, body: { changed: false, policy_version: "v2" } },
  ]);
  assertEquals(await watch.once(), 0);
  assertEquals(followed, ["v2"]);
  assertEquals(watch.state, "watching");
  assertEquals(await watch.once(), 0);
  assertEquals(followed, ["v2"], "no change: nothing fetched");
  assertEquals(paths, [
    "/api/cluster/nodes/0123456789abcdef/policy/watch?since=v1",
    "/api/cluster/nodes/0123456789abcdef/policy/watch?since=v2",
  ]);
});

Deno.test("NodeWatch falls back to the heartbeat on a controller without the watch (404)", async () => {
  const { watch, followed, logger } = nodeWatch([
    { status: 404, body: { error: { code: "NOT_FOUND" } } },
    { status: 404, body: { error: { code: "NOT_FOUND" } } },
  ]);
  assertEquals(await watch.once(), UNSUPPORTED_RETRY_MS);
  assertEquals(await watch.once(), UNSUPPORTED_RETRY_MS);
  assertEquals(watch.state, "unsupported");
  assertEquals(followed, []);
  assertEquals(logger.lines.filter((l) => l.includes("no policy watch")).length, 1);
});

Deno.test("NodeWatch backs off while the watch fails, up to a cap, and a failed follow waits too", async () => {
  const failures = Array.from({ length: 8 }, () => new Error("connection refused"));
  const { watch, logger } = nodeWatch([
    ...failures,
    { status: 503, body: { error: { code: "CLUSTER_WATCH_BUSY" } } },
  ]);
  const delays: number[] = [];
  for (let i = 0; i < 9; i++) delays.push(await watch.once());
  assertEquals(delays.slice(0, 5), [5000, 10_000, 20_000, 40_000, 60_000]);
  assertEquals(delays.at(-1), FAILING_MAX_DELAY_MS);
  assertEquals(watch.state, "failing");
  assertEquals(logger.lines.filter((l) => l.includes("policy watch failed")).length, 1);

  const refusing = nodeWatch([{ status: 200, body: { policy_version: "v2" } }], false);
  ok(
    await refusing.watch.once() >= 5000,
    "a policy that cannot be applied is not asked for at once",
  );
});

Deno.test("NodeWatch.stop() ends a waiting watch", async () => {
  let aborted = false;
  const client = {
    request(_m: string, _p: string, _b: unknown, o: { signal: AbortSignal }) {
      return new Promise((_resolve, reject) => {
        o.signal.addEventListener("abort", () => {
          aborted = true;
          reject(o.signal.reason);
        });
      });
    },
  } as unknown as ControllerClient;
  const watch = new NodeWatch({
    nodeId: "0123456789abcdef",
    logger: createMemoryLogger(),
    intervalMs: 5000,
    client: () => client,
    version: () => "v1",
    follow: () => Promise.resolve(true),
    timers: new FakeTimers(),
  });
  watch.start();
  await watch.stop();
  assertEquals([aborted, watch.state], [true, "stopped"]);
});
