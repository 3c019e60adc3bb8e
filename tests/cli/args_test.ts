import { assertEquals } from "../_helpers/assert.ts";
import { parseFlags } from "../../cli/args.ts";
import { flagProblemText } from "../../cli/output.ts";
import { translator } from "../../cli/i18n/i18n.ts";

const OPTIONS = { name: { type: "string" }, force: { type: "boolean" } } as const;
const problem = (args: string[], positionals = { min: 0, max: 0 }) => {
  const r = parseFlags(args, OPTIONS, positionals);
  return r.kind === "error" ? r.problem : undefined;
};

Deno.test("parseFlags() reports problems as data, read from tokens rather than error text", () => {
  assertEquals(problem(["--frob"]), { code: "unknown_option", option: "--frob" });
  assertEquals(problem(["--frob=1"]), { code: "unknown_option", option: "--frob" });
  assertEquals(problem(["-x"]), { code: "unknown_option", option: "-x" });
  assertEquals(problem(["--name"]), { code: "missing_value", option: "--name" });
  assertEquals(problem(["--name", "--force"]), { code: "missing_value", option: "--name" });
  assertEquals(problem(["--force=yes"]), { code: "no_value", option: "--force" });
  assertEquals(problem(["a"]), { code: "unexpected_argument", argument: "a" });
  assertEquals(problem([], { min: 1, max: 1 }), { code: "missing_argument" });
  assertEquals(problem(["--name=-dash", "--force"]), undefined);
  assertEquals(problem(["--", "--force"], { min: 1, max: 1 }), undefined);
});

Deno.test("flagProblemText() words a problem in the selected language", () => {
  const p = { code: "unknown_option", option: "--frob" } as const;
  assertEquals(flagProblemText(translator("en"), p), 'Unknown option "--frob"');
  assertEquals(flagProblemText(translator("zh-CN"), p), "未知选项 “--frob”");
});
