import { assertEquals } from "./assert.ts";

/** Runs `main.ts` as a real child process, exactly as the compiled `waf` would run. */
const MAIN = new URL("../../main.ts", import.meta.url).pathname;

export interface WafProcess extends AsyncDisposable {
  readonly child: Deno.ChildProcess;
  /** Resolves with the first stderr/stdout line matching `re`. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Everything printed so far. */
  output(): string;
  /** Waits for the process to exit by itself; resolves with its exit code. */
  wait(): Promise<number>;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
}

/**
 * `denoFlags` go before the main module (e.g. `--preload FILE`); `wrapper` runs deno through a
 * command (e.g. `["prlimit", "--nofile=1024:1024"]`).
 */
export function spawnWaf(
  args: readonly string[],
  env: Record<string, string> = {},
  denoFlags: readonly string[] = [],
  wrapper: readonly string[] = [],
): WafProcess {
  const command = [...wrapper, Deno.execPath(), "run", "-A", ...denoFlags, MAIN, ...args];
  const child = new Deno.Command(command[0]!, {
    args: command.slice(1),
    env,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  let text = "";
  const waiters: { re: RegExp; resolve: (m: RegExpExecArray) => void }[] = [];
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      for (const w of [...waiters]) {
        const m = w.re.exec(text);
        if (m) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(m);
        }
      }
    }
  };
  const pumps = Promise.all([pump(child.stdout), pump(child.stderr)]);
  let exited: Promise<number> | undefined;
  const status = () =>
    exited ??= child.status.then(async (s) => {
      await pumps;
      return s.code;
    });
  return {
    child,
    output: () => text,
    // 60 s: a waf process starting beside other test runs at load 20 printed nothing in 20 s.
    waitFor(re, timeoutMs = 60_000) {
      const m = re.exec(text);
      if (m) return Promise.resolve(m);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`timed out waiting for ${re} in:\n${text}`)),
          timeoutMs,
        );
        waiters.push({
          re,
          resolve: (found) => {
            clearTimeout(timer);
            resolve(found);
          },
        });
        status().then(() => {
          clearTimeout(timer);
          const late = re.exec(text);
          if (late) resolve(late);
          else reject(new Error(`process exited before ${re} appeared:\n${text}`));
        });
      });
    },
    wait: () => status(),
    async stop(signal: Deno.Signal = "SIGTERM") {
      try {
        child.kill(signal);
      } catch { /* already exited */ }
      return await status();
    },
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGKILL");
      } catch { /* already exited */ }
      await status();
    },
  };
}

/**
 * Runs deno with `args` (`["eval", "--ext=ts", code]`, `["run", "-A", script]`) in a process of
 * its own, expects it to succeed, and returns the JSON its last printed line holds: for what the
 * `deno test` process would disturb (the test files running beside a test start threads and move
 * its memory).
 */
export async function denoJson<T>(args: readonly string[]): Promise<T> {
  const out = await new Deno.Command(Deno.execPath(), { args: [...args], stdin: "null" }).output();
  const printed = new TextDecoder().decode(out.stdout);
  assertEquals(out.code, 0, printed + new TextDecoder().decode(out.stderr));
  return JSON.parse(printed.trim().split("\n").at(-1)!) as T;
}
