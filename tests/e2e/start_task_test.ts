/**
 * The README's start command, `npx --yes deno@2.9.6 task start`, stopped the way a process
 * manager stops it: SIGTERM to the npx process only. The chain below it (sh, deno task, the
 * server) must end too, gracefully, and free both ports.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { ignoreWithout, missing, probe, runs } from "../_helpers/services.ts";
import { tempDir } from "../_helpers/temp.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const CONFIG =
  'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n';

const HAS_NPX = await probe("npx", () => runs("npx"));

async function refuses(port: number): Promise<boolean> {
  try {
    (await Deno.connect({ hostname: "127.0.0.1", port })).close();
    return false;
  } catch (err) {
    return err instanceof Deno.errors.ConnectionRefused;
  }
}

/** Processes whose command line mentions `needle` (the test's own data directory). */
function processesWith(needle: string): string[] {
  const found: string[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmd = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).replaceAll("\0", " ");
      if (cmd.includes(needle)) found.push(`${entry.name}: ${cmd}`);
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

Deno.test({
  name:
    "SIGTERM to the npx of `npx --yes deno@2.9.6 task start` stops the server gracefully and frees both ports (needs npx)",
  ignore: ignoreWithout(HAS_NPX),
}, async () => {
  if (!HAS_NPX) throw missing("npx is not installed");
  await using dir = await tempDir();
  await Deno.writeTextFile(`${dir}/waf.yaml`, CONFIG);
  const npx = new Deno.Command("npx", {
    args: ["--yes", "deno@2.9.6", "task", "start", "--data-dir", `${dir}`],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    stdin: "null",
  }).spawn();
  let text = "";
  const pump = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s.pipeThrough(new TextDecoderStream())) text += chunk;
  };
  // The pipes close only when every process of the chain has exited.
  const closed = Promise.all([pump(npx.stdout), pump(npx.stderr)]);
  try {
    let started: RegExpExecArray | null = null;
    for (let i = 0; i < 600 && !started; i++) {
      started = /data_plane=127\.0\.0\.1:(\d+) management=http:\/\/127\.0\.0\.1:(\d+)/.exec(text);
      if (!started) await new Promise((r) => setTimeout(r, 100));
    }
    ok(started, `the server did not start:\n${text}`);
    const [dataPort, mgmtPort] = [Number(started![1]), Number(started![2])];
    ok(processesWith(`${dir}`).length >= 2, "deno task and the server run");

    npx.kill("SIGTERM");
    await npx.status;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ended = await Promise.race([
      closed.then(() => true),
      new Promise<boolean>((r) => timer = setTimeout(() => r(false), 30_000)),
    ]);
    clearTimeout(timer);
    ok(ended, `the chain below npx is still running:\n${processesWith(`${dir}`).join("\n")}`);
    assertMatch(text, /shutting down/);
    assertMatch(text, /INFO {2}stopped/);
    assertEquals(processesWith(`${dir}`), [], "nothing of the chain is left");
    ok(await refuses(dataPort), "the data port is free");
    ok(await refuses(mgmtPort), "the management port is free");
  } finally {
    for (const p of processesWith(`${dir}`)) {
      Deno.kill(Number(p.split(":")[0]), "SIGKILL");
    }
    await closed;
  }
});
