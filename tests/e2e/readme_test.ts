/**
 * The README's "Try it", run as a new operator runs it: every fenced `bash` block of README.md,
 * exactly as printed and in order, in one bash session started in the clone's folder, against the
 * real `waf serve` the README starts (`npx --yes deno@2.9.6 task start`) and its demo upstream
 * (`python3 -m http.server`). The README prints fixed ports (8080, 9443, 3000), so the session runs
 * in its own network, mount and PID namespaces (`unshare -n -m -p -f`, as root, loopback brought
 * up as in executable_test.ts): the ports are free there whatever runs on the machine, nothing is
 * reachable from outside, and every process the README starts ends with the session. npm is told to
 * use its cache (`npm_config_offline`), since the namespace has no network. The test then checks
 * what the README says each block prints, and that nothing was written into the clone.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { exists, ignoreWithout, missing, probe, runs } from "../_helpers/services.ts";

const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
const PATH_SBIN = "PATH=$PATH:/usr/sbin:/sbin";

/** The README's fenced bash blocks, as printed. */
export async function readmeBashBlocks(): Promise<string[]> {
  const readme = await Deno.readTextFile(`${ROOT}/README.md`);
  return [...readme.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** Why the README cannot run here, or undefined when it can. */
async function absent(): Promise<string | undefined> {
  if (Deno.uid() !== 0) return "not root (unshare -n -m -p needs it)";
  const tools = [];
  for (const bin of ["bash", "curl", "jq", "python3", "npx", "unshare"]) {
    if (!(await probe(bin, () => runs(bin)))) tools.push(bin);
  }
  if (tools.length > 0) return `not installed: ${tools.join(", ")}`;
  const ns = await new Deno.Command("unshare", {
    args: ["-n", "-m", "-p", "-f", "--mount-proc", "sh", "-c", `${PATH_SBIN}; ip link set lo up`],
    stdout: "null",
    stderr: "null",
  }).output();
  return ns.code === 0 ? undefined : "unshare -n -m -p or ip link set lo up is not permitted";
}

const MISSING = await absent();
const MARK = "@@readme-block";

Deno.test("the README's Try it has its bash blocks: start, setup link, curl setup, traffic, log, stop", async () => {
  const blocks = await readmeBashBlocks();
  assertEquals(blocks.length, 6, blocks.join("\n---\n"));
  ok(blocks[0]!.includes("npx --yes deno@2.9.6 task start"), "started as the Quick start says");
  ok(blocks.every((b) => !/<[a-zA-Z][\w -]*>/.test(b)), "no <placeholder> left in a block");
  ok(blocks.every((b) => !/curl -i\b/.test(b)), "curl -i always with -s");
});

Deno.test({
  name: "the README's bash blocks, pasted in order, protect a site and explain the attack",
  ignore: ignoreWithout(MISSING === undefined),
  async fn() {
    if (MISSING) throw missing(MISSING);
    const blocks = await readmeBashBlocks();
    // What the README writes, by name: none may appear in the clone (other tests run alongside,
    // so the clone's whole listing is no measure).
    const WRITES = [
      "cookies",
      "site.json",
      "blocked.txt",
      "data",
      "site",
      "waf.log",
      "upstream.log",
    ];
    const inClone = async () => {
      const found = await Promise.all(WRITES.map((f) => exists(`${ROOT}/${f}`)));
      return WRITES.filter((_, i) => found[i]);
    };
    const before = await inClone();
    // Between the blocks, a marker line splits what each printed; after the last, the session
    // waits for the WAF to log its stop and reports the scratch folder and the trace id.
    const script = [
      "set -euo pipefail",
      ...blocks.flatMap((b, i) => [`echo "${MARK} ${i + 1}"`, b]),
      `echo "${MARK} end"`,
      `for i in $(seq 100); do grep -q 'INFO  stopped' "$WAF_TRY/waf.log" && break; sleep 0.1; done`,
      'echo "try=$WAF_TRY trace=$TRACE pwd=$PWD"',
      'cat "$WAF_TRY/waf.log"',
    ].join("\n");
    const run = await new Deno.Command("unshare", {
      args: [
        "-n",
        "-m",
        "-p",
        "-f",
        "--mount-proc",
        "--propagation",
        "private",
        "bash",
        "-c",
        `${PATH_SBIN}; ip link set lo up && exec bash -c "$1"`,
        "bash",
        script,
      ],
      cwd: ROOT,
      env: { npm_config_offline: "true", NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(run.stdout);
    const stderr = new TextDecoder().decode(run.stderr);
    assertEquals(run.code, 0, `${stdout}\n${stderr}`);
    const parts = stdout.split(new RegExp(`^${MARK} .*$`, "m"));
    const [, start, link, setup, traffic, log, stop, end] = parts;
    ok(end !== undefined, stdout);

    // 1. Both servers up, the WAF ready and answering 404 for an unknown host.
    assertMatch(start!, /^\{"status":"ready"\}$/m);
    assertMatch(start!, /^HTTP\/1\.1 404 Not Found/m);
    // 2. The setup link on the default management address.
    assertMatch(link!, /^http:\/\/127\.0\.0\.1:9443\/setup#token=[\w-]{20,}$/m);
    // 3. The administrator, the sign-in and the site.
    assertMatch(setup!, /"username":"admin","role":"admin"/);
    assertMatch(setup!, /^admin$/m);
    assertMatch(setup!, /\{"id":"\w+","name":"shop","mode":"block","level":"balanced"\}/);
    // 4. The demo upstream's page through the WAF; the attack's block page with its trace id.
    const [, trace] = /trace=([0-9a-f]{32})/.exec(end!) ?? [];
    ok(trace, end);
    assertMatch(traffic!, /^Hello from the demo upstream$/m);
    assertMatch(traffic!, /^HTTP\/1\.1 403 Forbidden/m);
    assertMatch(traffic!, /^2$/m);
    // 5. The attack log's record of that trace: blocked by the engine as SQL injection.
    const record = JSON.parse(log!);
    assertEquals([record.action, record.status, record.class], ["block", 403, "sqli"]);
    assertEquals(record.query, "id=1'%20or%201=1--");
    assertMatch(record.evidence, /or 1=1/);
    assertEquals(record.checks.at(-1), "engine");
    assertEquals(stop!.trim(), "");
    // 6. The WAF stopped gracefully on the kill, the shell is back in the clone's folder.
    assertMatch(end!, /shutting down/);
    assertMatch(end!, /INFO {2}stopped/);
    assertMatch(end!, new RegExp(`pwd=${ROOT}\\b`));
    assertMatch(end!, new RegExp(`request blocked .*trace_id=${trace}`));

    // Everything was written in the scratch folder, nothing in the clone.
    const [, scratch] = /try=(\S+)/.exec(end!)!;
    for (const f of ["cookies", "site.json", "blocked.txt", "data/waf.db", "site/index.html"]) {
      ok(Deno.statSync(`${scratch}/${f}`).isFile, f);
    }
    assertEquals(await inClone(), before, "files the README left in the clone");
    await Deno.remove(scratch!, { recursive: true });
  },
});
