/**
 * The README's recipe for opening the console from another machine, run by bash as printed
 * against the `waf.yaml` a first start writes (with `deno` for `npx --yes deno@2.9.6` and this
 * checkout's main.ts): the edited file passes `waf config check` with the host's address and
 * `tls: auto`, and the same address without TLS is refused naming the key, as the README says.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { tempDir } from "../_helpers/temp.ts";
import { DEFAULT_CONFIG_YAML } from "../../mod/config/config_default.ts";
import { parse } from "yaml";

const ROOT = new URL("../../", import.meta.url);
const MAIN = new URL("main.ts", ROOT).pathname;

/** The command lines of the README's sh block that edits waf.yaml (comment lines out). */
async function recipe(): Promise<string[]> {
  const readme = await Deno.readTextFile(new URL("README.md", ROOT));
  const section = readme.slice(readme.indexOf("### Opening the console from another machine"));
  const block = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!)
    .find((b) => b.includes("sed -i"));
  ok(block, "the README has the recipe");
  return block!.split("\n").filter((l) => l.trim() !== "" && !l.trim().startsWith("#"));
}

async function bash(cwd: string, script: string) {
  const out = await new Deno.Command("bash", {
    args: ["-euo", "pipefail", "-c", script],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

Deno.test("the README's remote-console recipe makes a waf.yaml that config check accepts, and TLS is what makes it valid", async () => {
  const lines = await recipe();
  ok(lines.some((l) => l.startsWith("ADDR=")), lines.join("\n"));
  await using dir = await tempDir();
  await Deno.mkdir(`${dir}/data`);
  await Deno.writeTextFile(`${dir}/data/waf.yaml`, DEFAULT_CONFIG_YAML);
  const script = lines.map((l) =>
    l.replace("npx --yes deno@2.9.6", JSON.stringify(Deno.execPath())).replace(
      " main.ts ",
      ` ${MAIN} `,
    )
  ).join("\n");
  const run = await bash(`${dir}`, script);
  assertEquals(run.code, 0, run.stderr);
  assertMatch(run.stdout, /Configuration "\.\/data\/waf\.yaml" is valid/);
  const config = parse(await Deno.readTextFile(`${dir}/data/waf.yaml`));
  assertEquals(config.server.management.listen, "192.0.2.10:9443");
  assertEquals(config.server.management.tls, "auto");

  // Without the TLS part, the same address is refused, naming the key (as the README quotes).
  await Deno.writeTextFile(`${dir}/data/waf.yaml`, DEFAULT_CONFIG_YAML);
  const noTls = script.replace(`; s/tls: \\"off\\"/tls: auto/`, "");
  ok(noTls !== script, "the TLS substitution is found");
  const refused = await bash(`${dir}`, noTls);
  assertEquals(refused.code, 2);
  assertMatch(
    refused.stdout + refused.stderr,
    /server\.management\.tls: expected "auto" or \{ cert_file, key_file \}: .*must not run without TLS/,
  );
});
