/**
 * A strict parser of the Prometheus text exposition format (0.0.4), for scrape tests: every line
 * is a HELP, a TYPE or a sample; every sample belongs to a family declared by TYPE before it
 * (histograms through `_bucket`, `_sum`, `_count`); names and label names follow the format's
 * grammar, label values are properly quoted and escaped, values are numbers; a family is declared
 * once and its samples are contiguous; histogram buckets are cumulative, end in `le="+Inf"` and
 * equal `_count`. Any violation throws, naming the line.
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf("=", i);
    if (eq < 0) throw new Error(`bad labels: ${line}`);
    const name = text.slice(i, eq);
    if (!LABEL.test(name)) throw new Error(`bad label name "${name}": ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`unquoted label value: ${line}`);
    let j = eq + 2;
    let value = "";
    for (;;) {
      const ch = text[j];
      if (ch === undefined) throw new Error(`unterminated label value: ${line}`);
      if (ch === "\\") {
        const next = text[j + 1];
        if (next === "n") value += "\n";
        else if (next === "\\" || next === '"') value += next;
        else throw new Error(`bad escape in label value: ${line}`);
        j += 2;
        continue;
      }
      if (ch === '"') break;
      if (ch === "\n") throw new Error(`raw line feed in label value: ${line}`);
      value += ch;
      j++;
    }
    if (name in labels) throw new Error(`label "${name}" twice: ${line}`);
    labels[name] = value;
    i = j + 1;
    if (text[i] === ",") i++;
    else if (i < text.length) throw new Error(`expected "," between labels: ${line}`);
  }
  return labels;
}

function parseValue(v: string, line: string): number {
  if (v === "+Inf") return Infinity;
  if (v === "-Inf") return -Infinity;
  if (v === "NaN") return NaN;
  if (!/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v)) throw new Error(`bad value "${v}": ${line}`);
  return Number(v);
}

export function parseExposition(text: string): { samples: Sample[]; types: Map<string, string> } {
  if (!text.endsWith("\n")) throw new Error("exposition must end with a line feed");
  const types = new Map<string, string>();
  const helps = new Set<string>();
  const samples: Sample[] = [];
  const closed = new Set<string>();
  let current: string | undefined;
  for (const line of text.slice(0, -1).split("\n")) {
    if (line.startsWith("# HELP ")) {
      const name = line.slice(7).split(" ")[0]!;
      if (!NAME.test(name)) throw new Error(`bad HELP name: ${line}`);
      if (helps.has(name)) throw new Error(`HELP twice: ${line}`);
      helps.add(name);
      continue;
    }
    if (line.startsWith("# TYPE ")) {
      const [name = "", type = "", ...rest] = line.slice(7).split(" ");
      if (!NAME.test(name) || !TYPES.has(type) || rest.length > 0) {
        throw new Error(`bad TYPE: ${line}`);
      }
      if (types.has(name)) throw new Error(`TYPE twice: ${line}`);
      if (current !== undefined) closed.add(current);
      types.set(name, type);
      current = name;
      continue;
    }
    if (line.startsWith("#") || line === "") throw new Error(`unexpected line: "${line}"`);
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`bad sample: ${line}`);
    const name = m[1]!;
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, "");
    if (!types.has(family)) throw new Error(`sample without TYPE: ${line}`);
    if (family !== name && types.get(family) !== "histogram" && types.get(family) !== "summary") {
      throw new Error(`suffix on a ${types.get(family)}: ${line}`);
    }
    if (family !== current || closed.has(family)) throw new Error(`family not contiguous: ${line}`);
    const labels = parseLabels(m[3] ?? "", line);
    if (name.endsWith("_bucket") && !("le" in labels)) {
      throw new Error(`bucket without le: ${line}`);
    }
    samples.push({ name, labels, value: parseValue(m[4]!, line) });
  }
  checkHistograms(samples, types);
  return { samples, types };
}

function checkHistograms(samples: Sample[], types: Map<string, string>): void {
  const series = new Map<string, { buckets: [number, number][]; count?: number }>();
  for (const s of samples) {
    const family = s.name.replace(/_(bucket|sum|count)$/, "");
    if (types.get(family) !== "histogram") continue;
    const { le, ...rest } = s.labels;
    const key = `${family}${JSON.stringify(rest)}`;
    const h = series.get(key) ?? { buckets: [] };
    series.set(key, h);
    if (s.name.endsWith("_bucket")) h.buckets.push([parseValue(le!, key), s.value]);
    else if (s.name.endsWith("_count")) h.count = s.value;
  }
  for (const [key, h] of series) {
    const last = h.buckets[h.buckets.length - 1];
    if (!last || last[0] !== Infinity) throw new Error(`${key}: no +Inf bucket`);
    for (let i = 1; i < h.buckets.length; i++) {
      if (h.buckets[i]![0] <= h.buckets[i - 1]![0]) throw new Error(`${key}: le not increasing`);
      if (h.buckets[i]![1] < h.buckets[i - 1]![1]) {
        throw new Error(`${key}: buckets not cumulative`);
      }
    }
    if (h.count !== last[1]) throw new Error(`${key}: _count differs from the +Inf bucket`);
  }
}

/** The value of the one sample with this name and these labels (a subset match), or 0. */
export function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}) {
  return samples.filter((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  ).reduce((a, s) => a + s.value, 0);
}
