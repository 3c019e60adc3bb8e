/** Reading SPEC.md for scripts/spec_audit.ts: numbered sections, table rows, backticked names. */

/** One audited name: where it comes from, whether the code matches, and what was seen. */
export interface Finding {
  readonly area: string;
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

export type Check = () => Finding;

/**
 * The text of each numbered section (`## 7. Errors` → "7", `### 4.3 ...` → "4.3"); an
 * unnumbered heading (`### Permission identifiers`) stays in the section above it.
 */
export function sections(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let current = "0";
  for (const line of text.split("\n")) {
    const m = /^#{2,3} (\d+(?:\.\d+)?)\.? /.exec(line);
    if (m) current = m[1]!;
    out.set(current, `${out.get(current) ?? ""}${line}\n`);
  }
  return out;
}

/** The body rows of every Markdown table in `text`, as trimmed cells (header and rule skipped). */
export function tableRows(text: string): string[][] {
  const rows: string[][] = [];
  let inTable = false;
  for (const line of text.split("\n")) {
    if (!line.startsWith("|")) {
      inTable = false;
      continue;
    }
    const cells = line.slice(1, line.endsWith("|") ? -1 : undefined).split("|").map((c) =>
      c.trim()
    );
    if (!inTable) {
      inTable = true; // the header row
      continue;
    }
    if (cells.every((c) => /^:?-+:?$/.test(c))) continue;
    rows.push(cells);
  }
  return rows;
}

/** The backticked spans of `text`, in order. */
export function ticks(text: string): string[] {
  return [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}
