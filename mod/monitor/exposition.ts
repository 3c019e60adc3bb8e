/**
 * The Prometheus text exposition format (version 0.0.4), written by hand: a scrape walks the
 * collectors and appends lines; nothing here runs on the data plane's request path. Label values
 * are escaped (backslash, double quote, line feed), as are HELP texts (backslash, line feed).
 */
import type { Histogram } from "../core/histogram.ts";

export const CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export type Labels = Readonly<Record<string, string>>;
export type MetricType = "counter" | "gauge" | "histogram";

const escapeLabel = (v: string) =>
  v.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
const escapeHelp = (v: string) => v.replaceAll("\\", "\\\\").replaceAll("\n", "\\n");

function labelText(labels: Labels, extra?: string): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  if (extra !== undefined) parts.push(extra);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

function num(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  return String(v);
}

/** One scrape's text, family by family (each family's samples follow its HELP and TYPE). */
export class Exposition {
  readonly #lines: string[] = [];
  readonly #declared = new Set<string>();

  /** Declares a family once; samples of it follow. */
  family(name: string, type: MetricType, help: string): this {
    if (this.#declared.has(name)) return this;
    this.#declared.add(name);
    this.#lines.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`);
    return this;
  }

  sample(name: string, labels: Labels, value: number): this {
    this.#lines.push(`${name}${labelText(labels)} ${num(value)}`);
    return this;
  }

  /**
   * A histogram's `_bucket` (cumulative, `le` in the family's unit), `_sum` and `_count`;
   * `scale` converts the histogram's unit (for example microseconds to seconds: 1e-6).
   */
  histogram(name: string, labels: Labels, h: Histogram, scale = 1): this {
    let cumulative = 0;
    const values = h.values;
    for (let i = 0; i <= h.bounds.length; i++) {
      cumulative += values[i]!;
      const le = i === h.bounds.length ? "+Inf" : num(roundScaled(h.bounds[i]! * scale));
      this.#lines.push(`${name}_bucket${labelText(labels, `le="${le}"`)} ${cumulative}`);
    }
    this.#lines.push(`${name}_sum${labelText(labels)} ${num(roundScaled(h.sum * scale))}`);
    this.#lines.push(`${name}_count${labelText(labels)} ${h.count}`);
    return this;
  }

  text(): string {
    return this.#lines.join("\n") + "\n";
  }
}

/** Drops floating-point noise from scaled bounds (0.0005 rather than 0.0005000000000000001). */
function roundScaled(v: number): number {
  return Number(v.toPrecision(12));
}

/** Appends one area's metrics to a scrape. */
export type Collector = (out: Exposition) => void;
