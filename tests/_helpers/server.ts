/**
 * A WAF for a test, on a temporary data directory with a real SQLite file: either started for
 * real (both listeners on port 0) or composed in-process without listeners, where management
 * requests go straight to the Hono app (`app.request`). The API helpers take either.
 */
import "./fast_hash.ts";
import { type Area, AREAS, composeAreas, type Composed } from "../../app/compose.ts";
import { type RunningServer, type ServerDeps, startServer } from "../../app/server.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { type Config, validateConfig } from "../../mod/config/config.ts";
import { createMemoryLogger } from "../../mod/core/logger.ts";
import { systemRandom } from "../../mod/core/random.ts";

/** What every test WAF has, whatever areas it composed. */
export interface TestBase
  extends Pick<RunningServer, "db" | "identity" | "routes" | "readiness">, AsyncDisposable {
  readonly dir: string;
  readonly logs: string[];
  readonly clock: FakeClock;
  /** Every delay the server asked for (answering a flooding client late); none is waited. */
  readonly sleeps: number[];
  /** One request to the management plane; `path` starts with `/`. */
  api(path: string, init?: RequestInit): Promise<Response>;
}

/** What the management-API helpers need: a listening server or an in-process app. */
export interface TestTarget
  extends TestBase, Pick<RunningServer, "dataPlane" | "apiAccess" | "ai" | "monitor" | "ops"> {}

export interface TestServer extends RunningServer, TestTarget {}

/**
 * An in-process WAF of the areas `A` (every area unless a test names some): the management app
 * answers without a socket; no data listener.
 */
export type TestApp<A extends Area = Area> = Composed<A> & TestBase;

/** A `sleep` that records every delay asked for and waits for none. */
function recordedSleeps() {
  const sleeps: number[] = [];
  const sleep = (ms: number) => {
    sleeps.push(ms);
    return Promise.resolve();
  };
  return { sleeps, sleep };
}

/** Deep-merges `overrides` into a config whose listeners bind 127.0.0.1:0. */
export function testConfig(overrides: Record<string, unknown> = {}): Config {
  const base: Record<string, unknown> = {
    server: {
      // In-process servers keep the data plane on the test's thread: tests drive a fake clock,
      // hold requests with `dataHandler` and read records as soon as a request ends. Tests of
      // the workers set `workers` themselves; spawned processes run the default (`auto`).
      data: { listen: "127.0.0.1:0", workers: 1 },
      management: { listen: "127.0.0.1:0" },
      shutdown_timeout: "5s",
    },
  };
  const merged = merge(base, overrides);
  const result = validateConfig(merged);
  if (result.kind !== "ok") throw new Error(`bad test config: ${JSON.stringify(result.problems)}`);
  return result.config;
}

function merge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] = v && typeof v === "object" && !Array.isArray(v) && prev && typeof prev === "object"
      ? merge(prev as Record<string, unknown>, v as Record<string, unknown>)
      : v;
  }
  return out;
}

export async function startTestServer(
  options: {
    config?: Record<string, unknown>;
    deps?: Partial<ServerDeps>;
    dir?: string;
  } = {},
): Promise<TestServer> {
  const dir = options.dir ?? await Deno.makeTempDir({ prefix: "waf-e2e-" });
  const logger = createMemoryLogger();
  const clock = new FakeClock(Date.now());
  const { sleeps, sleep } = recordedSleeps();
  const server = await startServer(
    { config: testConfig(options.config), dataDir: dir },
    { clock, random: systemRandom, logger, env: {}, sleep, ...options.deps },
  );
  let closed = false;
  return Object.assign(server, {
    dir,
    logs: logger.lines,
    clock,
    sleeps,
    api: (path: string, init?: RequestInit) => fetch(`${server.managementUrl}${path}`, init),
    async [Symbol.asyncDispose]() {
      if (!closed) {
        closed = true;
        await server.shutdown();
      }
      if (!options.dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  });
}

/** The peer address in-process requests appear to come from. */
const LOOPBACK_PEER = { transport: "tcp" as const, hostname: "127.0.0.1", port: 40_000 };

export interface TestAppOptions {
  readonly config?: Record<string, unknown>;
  readonly deps?: Partial<ServerDeps>;
}

/**
 * Composes a WAF on a temporary store without opening a listener, for route tests where a real
 * socket is not the point: management requests go to the Hono app in-process. `areas` composes
 * only those (with identity and what they need), and the app mounts only their routes.
 */
export function createTestApp(options?: TestAppOptions): Promise<TestApp>;
export function createTestApp<A extends Area>(
  options: TestAppOptions & { areas: readonly A[] },
): Promise<TestApp<A>>;
export async function createTestApp(
  options: TestAppOptions & { areas?: readonly Area[] } = {},
): Promise<TestApp<never>> {
  const dir = await Deno.makeTempDir({ prefix: "waf-app-" });
  const logger = createMemoryLogger();
  const clock = new FakeClock(Date.now());
  const { sleeps, sleep } = recordedSleeps();
  const composed = await composeAreas(
    {
      config: testConfig(options.config),
      dataDir: dir,
      areas: options.areas ?? AREAS,
    },
    { clock, random: systemRandom, logger, env: {}, sleep, ...options.deps },
  );
  await composed.start("http://127.0.0.1:9443");
  const env = { remoteAddr: LOOPBACK_PEER, tls: false };
  let closed = false;
  return Object.assign(composed, {
    dir,
    logs: logger.lines,
    clock,
    sleeps,
    api: async (path: string, init?: RequestInit) =>
      await composed.app.request(`http://127.0.0.1:9443${path}`, init, env),
    async [Symbol.asyncDispose]() {
      if (!closed) {
        closed = true;
        await composed.close();
      }
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  });
}
