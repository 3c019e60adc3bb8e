/**
 * Every relative link in the documentation (README.md and docs/) points at a file that exists,
 * and every `#anchor` at a heading of that file, spelled as GitHub spells heading anchors: the
 * docs are read on GitHub and in the console's help links, where a broken link is a dead end.
 */
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { assertEquals } from "../_helpers/assert.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The Markdown files checked: README.md and everything under docs/. */
function markdownFiles(): string[] {
  const files = [join(ROOT, "README.md")];
  const walk = (dir: string) => {
    for (const entry of Deno.readDirSync(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) walk(path);
      else if (entry.name.endsWith(".md")) files.push(path);
    }
  };
  walk(join(ROOT, "docs"));
  return files;
}

/** The text outside fenced code blocks and inline code spans, where links and headings live. */
function prose(text: string): string[] {
  const lines: string[] = [];
  let fence = false;
  for (const line of text.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) {
      fence = !fence;
      lines.push("");
      continue;
    }
    lines.push(fence ? "" : line);
  }
  return lines;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor of a Markdown file, with GitHub's `-1`, `-2` for repeated headings. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of prose(text)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = anchorOf(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The relative link targets of a Markdown file (external and mail links left out). */
function linksOf(text: string): string[] {
  const out: string[] = [];
  for (const line of prose(text)) {
    const plain = line.replace(/`[^`]*`/g, "");
    for (const m of plain.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      out.push(target);
    }
  }
  return out;
}

Deno.test("anchorOf() spells headings as GitHub does", () => {
  assertEquals(
    anchorOf("Workers: the data plane on every core"),
    "workers-the-data-plane-on-every-core",
  );
  assertEquals(
    anchorOf("HTTPS: a certificate per site, HTTP/2"),
    "https-a-certificate-per-site-http2",
  );
  assertEquals(anchorOf("`GET /api/logs/stats`"), "get-apilogsstats");
  assertEquals(
    anchorOf("The data listener's own HTTP/1.1 server"),
    "the-data-listeners-own-http11-server",
  );
});

Deno.test("every relative link in README.md and docs/ reaches a file and a heading", () => {
  const broken: string[] = [];
  const cache = new Map<string, Set<string>>();
  for (const file of markdownFiles()) {
    const text = Deno.readTextFileSync(file);
    for (const link of linksOf(text)) {
      const hash = link.indexOf("#");
      const path = hash < 0 ? link : link.slice(0, hash);
      const anchor = hash < 0 ? "" : decodeURIComponent(link.slice(hash + 1));
      const target = path === "" ? file : join(dirname(file), decodeURIComponent(path));
      let stat: Deno.FileInfo | undefined;
      try {
        stat = Deno.statSync(target);
      } catch {
        broken.push(`${relative(ROOT, file)}: ${link} (no such file)`);
        continue;
      }
      if (anchor === "") continue;
      if (!stat.isFile || !target.endsWith(".md")) {
        broken.push(
          `${relative(ROOT, file)}: ${link} (an anchor into a file that is not Markdown)`,
        );
        continue;
      }
      let anchors = cache.get(target);
      if (anchors === undefined) {
        anchors = anchorsOf(Deno.readTextFileSync(target));
        cache.set(target, anchors);
      }
      if (!anchors.has(anchor)) broken.push(`${relative(ROOT, file)}: ${link} (no such heading)`);
    }
  }
  assertEquals(broken, []);
});

/** Source folders whose comments point into the docs. */
const SOURCE_DIRS = ["app", "cli", "db", "engine", "mod", "net", "routes", "scripts"];

/** The text of a source file's comments, each comment's lines joined by single spaces. */
function commentsOf(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/\/\*([\s\S]*?)\*\//g)) {
    out.push(m[1]!.split("\n").map((l) => l.replace(/^\s*\*?\s?/, "")).join(" "));
  }
  let run: string[] = [];
  for (const line of text.split("\n")) {
    const m = /^\s*\/\/\s?(.*)$/.exec(line);
    if (m) {
      run.push(m[1]!);
      continue;
    }
    if (run.length > 0) out.push(run.join(" "));
    run = [];
  }
  if (run.length > 0) out.push(run.join(" "));
  return out.map((c) => c.replace(/\s+/g, " "));
}

Deno.test("every docs pointer in a source comment names a file and a heading that exist", () => {
  const broken: string[] = [];
  // What a pointer may name: a heading (or its start) or a bold lead-in of a paragraph.
  const headings = new Map<string, string[]>();
  const headingsOf = (path: string): string[] | undefined => {
    if (!headings.has(path)) {
      let text: string;
      try {
        text = Deno.readTextFileSync(join(ROOT, path));
      } catch {
        return undefined;
      }
      headings.set(
        path,
        prose(text).flatMap((l) => {
          const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(l);
          if (m) return [m[1]!];
          return [...l.matchAll(/\*\*([^*]+?)\.?\*\*/g)].map((b) => b[1]!);
        }),
      );
    }
    return headings.get(path);
  };
  const walk = (dir: string): string[] =>
    [...Deno.readDirSync(join(ROOT, dir))].flatMap((e) =>
      e.isDirectory
        ? walk(`${dir}/${e.name}`)
        : /\.(ts|js)$/.test(e.name)
        ? [`${dir}/${e.name}`]
        : []
    );
  for (const file of SOURCE_DIRS.flatMap(walk)) {
    for (const comment of commentsOf(Deno.readTextFileSync(join(ROOT, file)))) {
      for (const m of comment.matchAll(/\b(docs\/[\w./-]+\.md)(?:,? \(?"([^"]+)")?/g)) {
        const found = headingsOf(m[1]!);
        if (found === undefined) broken.push(`${file}: ${m[1]} (no such file)`);
        else if (m[2] !== undefined && !found.some((h) => h.startsWith(m[2]!))) {
          broken.push(`${file}: ${m[1]}, "${m[2]}" (no such heading)`);
        }
      }
    }
  }
  assertEquals(broken, []);
});
