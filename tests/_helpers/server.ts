/** Starts a real WAF (both listeners on port 0, a real SQLite file) for a test. */
import { type RunningServer, type ServerDeps, startServer } from "../../app/server.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { type Config, validateConfig } from "../../mod/config/config.ts";
import { createMemoryLogger } from "../../mod/core/logger.ts";
import { systemRandom } from "../../mod/core/random.ts";

export interface TestServer extends RunningServer, AsyncDisposable {
  readonly dir: string;
  readonly logs: string[];
  readonly clock: FakeClock;
  /** Every delay the server asked for (answering a flooding client late); none is waited. */
  readonly sleeps: number[];
}

/** Deep-merges `overrides` into a config whose listeners bind 127.0.0.1:0. */
export function testConfig(overrides: Record<string, unknown> = {}): Config {
  const base: Record<string, unknown> = {
    server: {
      data: { listen: "127.0.0.1:0" },
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
  const sleeps: number[] = [];
  const sleep = (ms: number) => {
    sleeps.push(ms);
    return Promise.resolve();
  };
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
    async [Symbol.asyncDispose]() {
      if (!closed) {
        closed = true;
        await server.shutdown();
      }
      if (!options.dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  });
}
