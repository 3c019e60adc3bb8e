/**
 * Run by tests/e2e/executable_test.ts inside `unshare -n -m` (no network but a loopback of its
 * own, a private mount table) as `deno run -A bare_machine.ts SCENARIO_JSON`: makes the machine
 * look bare (/usr/bin without node, npm, npx or deno, which this machine has installed), then
 * runs the copied `waf` through the operator's day one with an empty HOME and PATH=/usr/bin:/bin,
 * and prints what it saw as one JSON line for the test to check.
 */
import { ADMIN, call, completeSetup, login } from "./identity.ts";
import { hostFetch } from "./data_client.ts";

export interface Scenario {
  /** Folder holding nothing but the `waf` file; commands run there. */
  readonly bare: string;
  readonly home: string;
  readonly dataDir: string;
  readonly crpPackage: string;
  readonly backupOut: string;
  /** Empty folder where the real /usr/bin stays reachable under the private mount. */
  readonly realBin: string;
}

export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Report {
  /** node, npm, npx, deno as found in /usr/bin and /bin (must be none). */
  readonly toolchain: string[];
  readonly version: Ran;
  readonly help: Ran;
  readonly configCheck: Ran;
  readonly serve: {
    readonly readyMs: number;
    readonly fine: number;
    readonly fineBody: string;
    readonly attack: number;
    readonly traceId: string;
    readonly traceInBody: boolean;
    /** Statuses of the console's page and one of its scripts, served from the unpacked files. */
    readonly console: readonly number[];
    readonly exit: number;
    readonly output: string;
  };
  readonly password: Ran;
  readonly backup: Ran;
  readonly crpVerify: Ran;
}

const HIDDEN = new Set(["node", "nodejs", "npm", "npx", "deno", "corepack"]);

/** Replaces /usr/bin (and so /bin, its link) with links to every tool in it but the toolchain. */
async function hideToolchain(realBin: string): Promise<void> {
  for (
    const args of [["--bind", "/usr/bin", realBin], [
      "-t",
      "tmpfs",
      "-o",
      "mode=755",
      "tmpfs",
      "/usr/bin",
    ]]
  ) {
    const out = await new Deno.Command("/usr/bin/mount", { args }).output();
    if (out.code !== 0) throw new Error(`mount ${args.join(" ")}: exit ${out.code}`);
  }
  for (const entry of Deno.readDirSync(realBin)) {
    if (HIDDEN.has(entry.name)) continue;
    // Relative links keep their text so they still resolve from /usr/bin.
    const target = entry.isSymlink
      ? Deno.readLinkSync(`${realBin}/${entry.name}`)
      : `${realBin}/${entry.name}`;
    Deno.symlinkSync(target, `/usr/bin/${entry.name}`);
  }
}

function toolchainLeft(): string[] {
  const found: string[] = [];
  for (const dir of ["/usr/bin", "/bin"]) {
    for (const name of ["node", "npm", "npx", "deno"]) {
      try {
        Deno.statSync(`${dir}/${name}`);
        found.push(`${dir}/${name}`);
      } catch { /* absent, as on a bare machine */ }
    }
  }
  return found;
}

const decoder = new TextDecoder();

function wafCommand(s: Scenario, args: readonly string[], stdin: "piped" | "null" = "null") {
  return new Deno.Command(`${s.bare}/waf`, {
    args: [...args],
    cwd: s.bare,
    clearEnv: true,
    env: { HOME: s.home, PATH: "/usr/bin:/bin" },
    stdin,
    stdout: "piped",
    stderr: "piped",
  });
}

async function waf(s: Scenario, args: readonly string[], input?: string): Promise<Ran> {
  const child = wafCommand(s, args, input === undefined ? "null" : "piped").spawn();
  if (input !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(input));
    await w.close();
  }
  const out = await child.output();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/** `waf serve` in front of a loopback upstream: a site made over the API, an attack, SIGTERM. */
async function serve(s: Scenario): Promise<Report["serve"]> {
  const upstream = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response("upstream ok"),
  );
  const started = performance.now();
  const child = wafCommand(s, ["serve", "--data-dir", s.dataDir]).spawn();
  let output = "";
  const pumps = [child.stdout, child.stderr].map(async (stream) => {
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) output += chunk;
  });
  try {
    let m: RegExpExecArray | null = null;
    while (!(m = /data_plane=127\.0\.0\.1:(\d+) management=(http:\/\/[\d.:]+)/.exec(output))) {
      if (performance.now() - started > 90_000) {
        throw new Error(`waf serve did not start:\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const management = m[2]!;
    for (;;) {
      const r = await fetch(`${management}/health/ready`).catch(() => undefined);
      await r?.body?.cancel();
      if (r?.status === 200) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const readyMs = Math.round(performance.now() - started);
    const dataUrl = `http://127.0.0.1:${m[1]}`;
    const api = {
      dir: s.dataDir,
      api: (path: string, init?: RequestInit) => fetch(`${management}${path}`, init),
    };
    await completeSetup(api);
    const session = await login(api, ADMIN.username, ADMIN.password);
    const created = await call(api, "POST", "/api/sites", {
      session,
      body: {
        name: "shop",
        hosts: ["shop.test"],
        upstreams: [`http://127.0.0.1:${upstream.addr.port}`],
        mode: "block",
      },
    });
    if (created.status !== 201) throw new Error(`site: ${created.status} ${await created.text()}`);
    await created.body?.cancel();
    const fine = await hostFetch(`${dataUrl}/products?id=42`, "shop.test");
    const fineBody = await fine.text();
    const attack = await hostFetch(
      `${dataUrl}/products?q=1'%20union%20select%20password%20from%20users--`,
      "shop.test",
    );
    const traceId = attack.headers.get("x-waf-trace-id") ?? "";
    const traceInBody = traceId !== "" && (await attack.text()).includes(traceId);
    const consoleStatuses: number[] = [];
    for (const path of ["/login", "/console/assets/app.js"]) {
      const r = await fetch(`${management}${path}`);
      await r.body?.cancel();
      consoleStatuses.push(r.status);
    }
    child.kill("SIGTERM");
    const { code } = await child.status;
    await Promise.all(pumps);
    return {
      readyMs,
      fine: fine.status,
      fineBody,
      attack: attack.status,
      traceId,
      traceInBody,
      console: consoleStatuses,
      exit: code,
      output,
    };
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* stopped already */ }
    await upstream.shutdown();
  }
}

export async function runScenario(s: Scenario): Promise<Report> {
  await hideToolchain(s.realBin);
  const toolchain = toolchainLeft();
  const version = await waf(s, ["--version"]);
  const help = await waf(s, ["help"]);
  const configCheck = await waf(s, ["config", "check", "--data-dir", s.dataDir]);
  const served = await serve(s);
  const password = await waf(
    s,
    ["user", "password", ADMIN.username, "--password-stdin", "--data-dir", s.dataDir],
    "Another-Correct-Horse-7\n",
  );
  const backup = await waf(s, ["store", "backup", "--out", s.backupOut, "--data-dir", s.dataDir]);
  const crpVerify = await waf(s, ["crp", "verify", s.crpPackage, "--data-dir", s.dataDir]);
  return { toolchain, version, help, configCheck, serve: served, password, backup, crpVerify };
}

if (import.meta.main) {
  const report = await runScenario(JSON.parse(Deno.args[0]!) as Scenario);
  console.log(JSON.stringify(report));
}
