/**
 * Runs the detector cases kept as data, one file per attack class, the way Coraza keeps its
 * operator tests (`tests/testdata/engine/<class>.json`):
 *
 * ```json
 * {
 *   "class": "rce",
 *   "placements": ["query", "json"],
 *   "attack": ["; cat /etc/passwd", { "value": "...", "placements": ["path"] }],
 *   "benign": ["ls 300 lexus", { "request": { "method": "GET", "headers": [["host", "a"]] } }]
 * }
 * ```
 *
 * Every attack must block at level `balanced` with a finding of the file's class; every
 * benign case must pass at `balanced`. A case is a string (placed at each of the file's
 * placements, `query` by default), an object with its own `placements`, or a whole request;
 * an object can name another `level` (`"strict"`: an attack that only blocks there, or a
 * benign value that must stay below even the medium band).
 */
import assert from "node:assert/strict";
import { BLOCKING_BAND, inspect } from "../../engine/inspect.ts";
import type { Confidence, EngineRequest, Inspection, Level } from "../../engine/types.ts";
import { place, type Placement, PLACEMENTS } from "../_helpers/placement.ts";

type Case = string | {
  readonly value?: string;
  readonly placements?: readonly Placement[];
  readonly request?: Partial<EngineRequest> & { readonly body?: string };
  readonly level?: Level;
};

interface CaseFile {
  readonly class: string;
  readonly placements?: readonly Placement[];
  readonly attack: readonly Case[];
  readonly benign: readonly Case[];
}

const DIR = new URL("../testdata/engine/", import.meta.url);
const RANK: Readonly<Record<Confidence, number>> = { low: 0, medium: 1, high: 2, critical: 3 };

function levelOf(c: Case): Level {
  return (typeof c === "object" ? c.level : undefined) ?? "balanced";
}

function requests(c: Case, file: CaseFile): Array<[string, EngineRequest]> {
  if (typeof c === "object" && c.request !== undefined) {
    const r = c.request;
    const req: EngineRequest = {
      method: r.method ?? "GET",
      path: r.path ?? "/",
      query: r.query ?? "",
      headers: r.headers ?? [["host", "shop.example.com"]],
      body: typeof r.body === "string" ? new TextEncoder().encode(r.body) : undefined,
    };
    return [[JSON.stringify(r), req]];
  }
  const value = typeof c === "string" ? c : c.value ?? "";
  const placements = (typeof c === "object" ? c.placements : undefined) ?? file.placements ??
    ["query"];
  return placements.map((p) => {
    assert.ok(PLACEMENTS.includes(p), `unknown placement "${p}"`);
    return [`${JSON.stringify(value)} in ${p}`, place(value, p)];
  });
}

function describe(result: Inspection): string {
  return result.findings.slice(0, 3).map((f) => `${f.ruleId} ${f.score} ${f.location}`).join(
    ", ",
  ) || "no findings";
}

const files: Array<[string, CaseFile]> = [];
for await (const entry of Deno.readDir(DIR)) {
  if (!entry.isFile || !entry.name.endsWith(".json")) continue;
  files.push([entry.name, JSON.parse(await Deno.readTextFile(new URL(entry.name, DIR)))]);
}
files.sort((a, b) => a[0].localeCompare(b[0]));

for (const [name, file] of files) {
  Deno.test(`${name}: every attack blocks at balanced as ${file.class}`, () => {
    const missed: string[] = [];
    for (const c of file.attack) {
      for (const [label, req] of requests(c, file)) {
        const level = levelOf(c);
        const result = inspect(req, { level });
        const own = result.findings.some((f) =>
          f.class === file.class && RANK[f.confidence] >= RANK[BLOCKING_BAND[level]]
        );
        if (!own) missed.push(`${label}: ${describe(result)}`);
      }
    }
    assert.deepEqual(missed, []);
  });

  Deno.test(`${name}: every benign look-alike passes at balanced`, () => {
    const blocked: string[] = [];
    for (const c of file.benign) {
      for (const [label, req] of requests(c, file)) {
        const result = inspect(req, { level: levelOf(c) });
        if (result.blocking !== undefined) blocked.push(`${label}: ${describe(result)}`);
      }
    }
    assert.deepEqual(blocked, []);
  });
}
