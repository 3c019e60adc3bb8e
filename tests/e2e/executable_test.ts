/**
 * The single `waf` file on a bare machine (issue #38): `deno task compile` builds the
 * self-contained kind (no denort here), the file is copied alone into an empty folder and run
 * with an empty HOME, PATH=/usr/bin:/bin without node, npm, npx or deno, no DENO_DIR and no
 * network (`unshare -n`, as root): --version, help, config check, serve with a site in front of a
 * loopback upstream blocking an attack, SIGTERM, then user password, store backup and crp verify
 * on that data directory. Twice: the first run unpacks, the second must not.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import type { Report, Scenario } from "../_helpers/bare_machine.ts";
import { tempDir } from "../_helpers/temp.ts";
import { ignoreWithout, missing as missingTool } from "../_helpers/services.ts";
import { buildPackage, generateSigningKey, importSigningKey } from "../../mod/ops/crp/crp_build.ts";
import { VERSION } from "../../mod/core/version.ts";
import { COMPILE_INCLUDES } from "../../scripts/compile_includes.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const DRIVER = new URL("../_helpers/bare_machine.ts", import.meta.url).pathname;
const PATH_SBIN = "PATH=$PATH:/usr/sbin:/sbin";

/** A private network and mount namespace (root only), and `ip` to bring its loopback up. */
function namespaces(): string | undefined {
  if (Deno.uid() !== 0) return "not root";
  try {
    const out = new Deno.Command("unshare", {
      args: ["-n", "-m", "--propagation", "private", "sh", "-c", `${PATH_SBIN}; ip link set lo up`],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    return out.code === 0 ? undefined : "unshare -n -m or ip link set lo up is not permitted";
  } catch {
    return "unshare is not installed";
  }
}

const missing = namespaces();

async function build(out: string): Promise<{ hash: string; bytes: number }> {
  const r = await new Deno.Command(Deno.execPath(), {
    // gzip -1 keeps the build short here; the shipped default is level 6 (docs/operations.md).
    args: [
      "run",
      "-A",
      `${ROOT}scripts/compile.ts`,
      out,
      "--kind",
      "self-contained",
      "--level",
      "1",
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(r.stdout);
  assertEquals(r.code, 0, text + new TextDecoder().decode(r.stderr));
  const m = /Built .* \(self-contained, [\d.]+ MB, content ([0-9a-f]{64})\)/.exec(text);
  ok(m, text);
  return { hash: m[1]!, bytes: (await Deno.stat(out)).size };
}

/** A package signed by a fresh key, and the waf.yaml that listens on port 0 and trusts it. */
async function dataDir(dir: string): Promise<{ data: string; pkg: string }> {
  const { privatePem, publicKey } = await generateSigningKey();
  const tar = await buildPackage(
    {
      name: "rules",
      version: "2026.1",
      createdAt: Date.UTC(2026, 0, 1),
      files: [{ path: "rules/sqli.json", data: new TextEncoder().encode('{"rules":[]}\n') }],
    },
    await importSigningKey(privatePem),
  );
  const data = `${dir}/data`;
  await Deno.mkdir(data, { mode: 0o700 });
  await Deno.writeTextFile(
    `${data}/waf.yaml`,
    'server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n' +
      `crp:\n  public_keys: ["${publicKey}"]\n`,
  );
  await Deno.writeFile(`${dir}/rules.tar`, tar);
  return { data, pkg: `${dir}/rules.tar` };
}

/** One day on the bare machine, inside fresh network and mount namespaces. */
async function dayOne(scenario: Scenario): Promise<Report> {
  const r = await new Deno.Command("unshare", {
    args: [
      "-n",
      "-m",
      "--propagation",
      "private",
      "sh",
      "-c",
      `${PATH_SBIN}; ip link set lo up && exec "$@"`,
      "sh",
      Deno.execPath(),
      "run",
      "-A",
      DRIVER,
      JSON.stringify(scenario),
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(r.stdout);
  assertEquals(r.code, 0, out + new TextDecoder().decode(r.stderr));
  return JSON.parse(out.trim().split("\n").at(-1)!) as Report;
}

function checkDay(report: Report, hash: string, cache: string): void {
  assertEquals(report.toolchain, []);
  assertEquals(report.version.code, 0, report.version.stderr);
  assertEquals(
    report.version.stdout,
    `waf ${VERSION}\nbuild: self-contained\ncontent: ${hash}\n` +
      `runtime: deno ${Deno.version.deno} (${Deno.build.target})\n`,
  );
  assertEquals(report.help.code, 0, report.help.stderr);
  ok(report.help.stdout.includes(`unpacked itself into ${cache}/`), report.help.stdout);
  assertEquals(report.configCheck.code, 0, report.configCheck.stderr);
  assertMatch(report.configCheck.stdout, /is valid/);
  const s = report.serve;
  assertEquals([s.fine, s.fineBody], [200, "upstream ok"], s.output);
  assertEquals(s.attack, 403, s.output);
  assertMatch(s.traceId, /^[0-9a-f]{32}$/);
  ok(s.traceInBody);
  assertEquals(s.console, [200, 200], s.output);
  assertEquals(s.exit, 0, s.output);
  assertMatch(s.output, /stopped/);
  assertEquals(report.password.code, 0, report.password.stderr);
  assertEquals(report.backup.code, 0, report.backup.stderr);
  assertMatch(report.backup.stdout, /ok/);
  assertEquals(report.crpVerify.code, 0, report.crpVerify.stderr);
  assertMatch(report.crpVerify.stdout, /Package rules 2026\.1 verified \(sha256 [0-9a-f]{64}\)/);
}

/** What an unpack would change: the folder's and its files' inodes and change times. */
function unpackMarks(dir: string): string {
  const marks = [".", ".verified", "bin/deno", "src/main.ts"].map((p) => {
    const st = Deno.statSync(`${dir}/${p}`);
    return `${p}:${st.ino}:${st.ctime?.getTime()}`;
  });
  return marks.join(" ");
}

const NAME = "the self-contained waf runs offline on a bare machine, first and later start";

Deno.test({
  name: `${NAME} (needs root with unshare and ip)`,
  ignore: ignoreWithout(missing === undefined),
  async fn(t) {
    if (missing) throw missingTool(`cannot make a bare machine here (${missing})`);
    await using dir = await tempDir("waf-exe-test-");
    const built = await build(`${dir}/waf`);
    const bare = `${dir}/bare`;
    const home = `${dir}/home`;
    await Deno.mkdir(bare);
    await Deno.mkdir(home);
    await Deno.copyFile(`${dir}/waf`, `${bare}/waf`);
    await Deno.chmod(`${bare}/waf`, 0o755);
    assertEquals((await Deno.stat(`${bare}/waf`)).mode! & 0o777, 0o755);
    const cache = `${home}/.cache/waf/${built.hash}`;

    const day = async (n: number) => {
      const round = `${dir}/round-${n}`;
      await Deno.mkdir(round);
      const { data, pkg } = await dataDir(round);
      await Deno.mkdir(`${round}/usr-bin`);
      const report = await dayOne({
        bare,
        home,
        dataDir: data,
        crpPackage: pkg,
        backupOut: `${round}/backup.db`,
        realBin: `${round}/usr-bin`,
      });
      checkDay(report, built.hash, cache);
      assertEquals([...Deno.readDirSync(bare)].map((e) => e.name), ["waf"]);
      assertEquals([...Deno.readDirSync(`${home}/.cache/waf`)].map((e) => e.name), [built.hash]);
      return report;
    };

    let marks = "";
    await t.step(
      "first start: unpacks once into ~/.cache/waf/<content>/ and runs offline",
      async () => {
        await day(1);
        marks = unpackMarks(cache);
        const carried = [...Deno.readDirSync(`${cache}/deno_dir/npm/registry.npmjs.org`)].map((e) =>
          e.name
        );
        ok(carried.includes("hono") && !carried.includes("playwright-core"), carried.join(" "));
        ok(!carried.includes("typescript"), carried.join(" "));
        for (const worker of COMPILE_INCLUDES.filter((p) => p.endsWith(".ts"))) {
          ok((await Deno.stat(`${cache}/src/${worker}`)).isFile, worker);
        }
      },
    );
    await t.step("later start: runs from the unpacked copy without unpacking again", async () => {
      await day(2);
      assertEquals(unpackMarks(cache), marks);
    });
  },
});
