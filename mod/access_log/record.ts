/**
 * One data-plane request as the access log keeps it, and the ordered chain of checks that ran.
 * The chain is shared by every check in the data plane: adding a check is one
 * `chain.add("ip_list", "pass")` call, which also times it.
 */
import type { AccessLogRow } from "../../db/access_log_rows.ts";
import { compactRecord } from "./lines.ts";
import { isSecretName, scrubText } from "../core/redact.ts";

export type Action = "pass" | "block" | "log" | "challenge";

/** One check's outcome, in the order the checks ran. */
export interface CheckEntry {
  readonly check: string;
  readonly result: string;
  /** Microseconds this check took. */
  readonly us: number;
  /** Rule or detector id behind the result, when there is one. */
  readonly rule?: string;
}

export interface FindingRecord {
  readonly class: string;
  readonly confidence: string;
  readonly score: number;
  readonly location: string;
  readonly evidence: string;
  readonly rule: string;
}

/**
 * How a request's inspection ended short of the whole request, when it did: `budget` when the
 * work budget (or the inspection's deadline) ran out, so only what was read was judged.
 */
export type InspectionFlag = "budget";

export interface AccessRecord {
  readonly trace_id: string;
  /** Milliseconds since the epoch when the request arrived. */
  readonly time: number;
  site_id: string | null;
  site: string | null;
  /** The client address (from forwarding headers only when the peer is a trusted proxy). */
  client_ip: string;
  /** The address of the TCP peer. */
  readonly peer_ip: string;
  readonly proto: "http" | "https";
  readonly method: string;
  readonly host: string;
  readonly path: string;
  readonly query: string;
  readonly user_agent: string | null;
  status: number;
  action: Action;
  readonly chain: CheckEntry[];
  finding: FindingRecord | null;
  /** Findings of every band, including those below the site's threshold. */
  findings: number;
  upstream: string | null;
  bytes_in: number | null;
  bytes_out: number | null;
  latency_us: { total: number; waf: number; upstream: number | null };
  /**
   * Set only when the inspection ended short ({@link InspectionFlag}); absent otherwise, so the
   * records of nearly every request keep their one shape.
   */
  inspection?: InspectionFlag;
}

/**
 * What a record copies from the request as it arrives, named as the data plane's transaction
 * (`routes/proxy/transaction.ts`) holds it: the transaction passes itself, so building the
 * record allocates nothing but the record.
 */
export interface Arrival {
  /** Milliseconds since the epoch when the request arrived. */
  readonly now: number;
  /** The address of the TCP peer. */
  readonly peer: string;
  readonly proto: "http" | "https";
  readonly method: string;
  readonly host: string;
  readonly path: string;
  readonly query: string;
}

/**
 * A record as a request arrives: what it asked for; nothing decided, counted or measured yet.
 * One class, so every record has one shape from its start (its fields in the order the JSON
 * keeps them) instead of a copy of the arguments with fields added one by one.
 *
 * @example
 * ```ts
 * const record = new ArrivingRecord(transaction, traceId, userAgent);
 * record.status = 200;
 * accessLog.push(record);
 * ```
 */
export class ArrivingRecord implements AccessRecord {
  readonly trace_id: string;
  readonly time: number;
  readonly peer_ip: string;
  readonly proto: "http" | "https";
  readonly method: string;
  readonly host: string;
  readonly path: string;
  readonly query: string;
  readonly user_agent: string | null;
  site_id: string | null = null;
  site: string | null = null;
  client_ip: string;
  status = 0;
  action: Action = "pass";
  readonly chain: CheckEntry[] = [];
  finding: FindingRecord | null = null;
  findings = 0;
  upstream: string | null = null;
  bytes_in: number | null = null;
  bytes_out: number | null = null;
  readonly latency_us: { total: number; waf: number; upstream: number | null } = {
    total: 0,
    waf: 0,
    upstream: null,
  };
  /** Assigned only when the inspection ended short: the field is absent otherwise. */
  declare inspection?: InspectionFlag;

  /** `arrival` is read, not kept: the record holds only its own fields. */
  constructor(arrival: Arrival, traceId: string, userAgent: string | null) {
    this.trace_id = traceId;
    this.time = arrival.now;
    this.peer_ip = arrival.peer;
    this.proto = arrival.proto;
    this.method = arrival.method;
    this.host = arrival.host;
    this.path = arrival.path;
    this.query = arrival.query;
    this.user_agent = userAgent;
    this.client_ip = arrival.peer;
  }
}

/** {@link ArrivingRecord} from the record's own field names (a refused request, tests). */
export function arrivingRecord(
  r: Pick<
    AccessRecord,
    "trace_id" | "time" | "peer_ip" | "proto" | "method" | "host" | "path" | "query" | "user_agent"
  >,
): AccessRecord {
  const arrival: Arrival = {
    now: r.time,
    peer: r.peer_ip,
    proto: r.proto,
    method: r.method,
    host: r.host,
    path: r.path,
    query: r.query,
  };
  return new ArrivingRecord(arrival, r.trace_id, r.user_agent);
}

/** Monotonic microseconds for check timings (not wall-clock time, never asserted in tests). */
export function micros(): number {
  return performance.now() * 1000;
}

/** Appends timed entries to a record's chain. */
export class Chain {
  #mark: number;
  readonly entries: CheckEntry[];
  constructor(entries: CheckEntry[], start: number = micros()) {
    this.entries = entries;
    this.#mark = start;
  }
  /** Records a check that ran since the previous entry (or since the request started). */
  add(check: string, result: string, rule?: string): void {
    this.addAt(micros(), check, result, rule);
  }
  /** {@link add} with a time already read (`micros()`), for a caller that needs it too. */
  addAt(now: number, check: string, result: string, rule?: string): void {
    const us = Math.round(now - this.#mark);
    this.#mark = now;
    this.entries.push(rule === undefined ? { check, result, us } : { check, result, us, rule });
  }
}

const EVIDENCE_LIMIT = 200;
const QUERY_LIMIT = 1024;
const NAME_SEPARATORS = /[.:[\]]/;
/** What {@link safeEvidence} makes of a credential (already masked when the record is stored). */
const MASKED = /^\[masked: \d+ characters\]$/;

/**
 * Cookies, and values whose name (or any part of a nested name: `query:token`,
 * `json.user.password`, `header:authorization`) looks secret, carry credentials: their evidence
 * is never stored.
 */
function secretLocation(location: string): boolean {
  if (location.startsWith("cookie")) return true;
  const start = location.search(NAME_SEPARATORS);
  if (start < 0) return false;
  return location.slice(start + 1).split(NAME_SEPARATORS).some((p) => p && isSecretName(p));
}

/**
 * The evidence as every sink gets it (access log, PostgreSQL, API, events): masked whole when it
 * came from a credential, else with secret-looking fragments (`token=...`, `"password": ...`,
 * bearer tokens, URL credentials) masked, then truncated.
 */
export function safeEvidence(location: string, evidence: string): string {
  if (MASKED.test(evidence)) return evidence;
  if (secretLocation(location)) return `[masked: ${evidence.length} characters]`;
  const text = scrubText(evidence);
  return text.length > EVIDENCE_LIMIT ? cut(text, EVIDENCE_LIMIT) : text;
}

/**
 * The first `limit` code units and an ellipsis, without the high half of a pair the limit splits
 * (a lone surrogate: PostgreSQL's jsonb refuses it, other readers make it U+FFFD).
 */
function cut(text: string, limit: number): string {
  const c = text.charCodeAt(limit - 1);
  return text.slice(0, c >= 0xd800 && c <= 0xdbff ? limit - 1 : limit) + "…";
}

/** The query string as stored: values of secret-looking parameters masked, then truncated. */
export function safeQuery(query: string): string {
  // A parameter name is part of the query: when nothing in it looks secret, no name does.
  if (query.length === 0 || (query.length <= QUERY_LIMIT && !isSecretName(query))) return query;
  const masked = query.split("&").map((pair) => {
    const eq = pair.indexOf("=");
    if (eq < 0) return pair;
    return isSecretName(pair.slice(0, eq)) ? `${pair.slice(0, eq)}=[masked]` : pair;
  }).join("&");
  return masked.length > QUERY_LIMIT ? cut(masked, QUERY_LIMIT) : masked;
}

/** The record as stored: itself when nothing needs masking, else a masked copy. */
function storedRecord(record: AccessRecord): AccessRecord {
  const finding = record.finding
    ? {
      ...record.finding,
      evidence: safeEvidence(record.finding.location, record.finding.evidence),
    }
    : null;
  const query = safeQuery(record.query);
  // Most records need no masking: serialised as they are, without a copy.
  return finding === null && query === record.query ? record : { ...record, query, finding };
}

/** Serialises a record for the store (and other sinks), masking on the way out. */
export function toRow(record: AccessRecord): AccessLogRow {
  const stored = storedRecord(record);
  return {
    trace_id: record.trace_id,
    time: record.time,
    site_id: record.site_id,
    client_ip: record.client_ip,
    method: record.method,
    host: record.host,
    path: record.path,
    status: record.status,
    action: record.action,
    attack_class: stored.finding?.class ?? null,
    record: JSON.stringify(stored),
  };
}

/**
 * {@link toRow} straight to the row's two lines of text (`lines.ts`, what
 * `rowLines(toRow(record))` makes) without the row object: what the data plane hands the access
 * log, so nothing of the record outlives the request. The second line is the compact record
 * (`compactRecord`: the fields the columns do not hold, without their names).
 */
export function recordLines(record: AccessRecord): string {
  const stored = storedRecord(record);
  return JSON.stringify([
    record.trace_id,
    record.time,
    record.site_id,
    record.client_ip,
    record.method,
    record.host,
    record.path,
    record.status,
    record.action,
    stored.finding?.class ?? null,
  ]) + "\n" + compactRecord(stored) + "\n";
}
