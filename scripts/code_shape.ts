/**
 * Reports the shape of the runtime code: functions longer than a bound and functions that take
 * more than four positional parameters (STYLE.md, "Habits"), so a structure change can say its
 * before and after with one command.
 *
 * @example
 * ```sh
 * deno task shape              # counts, the 20 longest functions
 * deno task shape --list 150   # every function over 150 lines
 * ```
 */
import ts from "typescript";

const ROOTS = [
  "main.ts",
  "cli.ts",
  "app",
  "cli",
  "console",
  "db",
  "engine",
  "mod",
  "net",
  "routes",
];

interface FnShape {
  readonly file: string;
  readonly line: number;
  readonly name: string;
  readonly lines: number;
  readonly params: number;
}

async function* sourceFiles(path: string): AsyncGenerator<string> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch {
    return;
  }
  if (info.isFile) {
    if (/\.(ts|js)$/.test(path) && !/\.d\.ts$/.test(path)) yield path;
    return;
  }
  for await (const entry of Deno.readDir(path)) {
    if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
    yield* sourceFiles(`${path}/${entry.name}`);
  }
}

function nameOf(node: ts.Node): string {
  if (
    (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name
  ) return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText();
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText();
  return "(anonymous)";
}

function shapesOf(file: string, text: string): FnShape[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: FnShape[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) ||
      ts.isArrowFunction(node) || ts.isFunctionExpression(node) ||
      ts.isConstructorDeclaration(node)
    ) {
      if (node.body) {
        const start = source.getLineAndCharacterOfPosition(node.getStart()).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        found.push({
          file,
          line: start + 1,
          name: nameOf(node),
          lines: end - start + 1,
          params: node.parameters.filter((p) => !p.dotDotDotToken).length,
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

if (import.meta.main) {
  const listAt = Deno.args[0] === "--list" ? Number(Deno.args[1] ?? 150) : 0;
  const all: FnShape[] = [];
  for (const root of ROOTS) {
    for await (const file of sourceFiles(root)) {
      all.push(...shapesOf(file, await Deno.readTextFile(file)));
    }
  }
  const over = (n: number) => all.filter((f) => f.lines > n).length;
  const byLength = [...all].sort((a, b) => b.lines - a.lines);
  console.log(`functions: ${all.length}`);
  console.log(`over 100 lines: ${over(100)}`);
  console.log(`over 150 lines: ${over(150)}`);
  console.log(`more than 4 positional parameters: ${all.filter((f) => f.params > 4).length}`);
  const shown = listAt > 0 ? byLength.filter((f) => f.lines > listAt) : byLength.slice(0, 20);
  for (const f of shown) console.log(`${f.lines}\t${f.file}:${f.line}\t${f.name}`);
  if (listAt > 0) {
    console.log("-- more than 4 positional parameters --");
    for (const f of all.filter((f) => f.params > 4)) {
      console.log(`${f.params}\t${f.file}:${f.line}\t${f.name}`);
    }
  }
}
