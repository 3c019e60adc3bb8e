/**
 * The access-log row as the table holds it, and the format the access log passes down to read
 * its text (`AccessLogFormat`): shared by the inserts, the queries and the shipping cursors.
 */
export interface AccessLogRow {
  readonly trace_id: string;
  readonly time: number;
  readonly site_id: string | null;
  readonly client_ip: string | null;
  readonly method: string | null;
  readonly host: string | null;
  readonly path: string | null;
  readonly status: number | null;
  readonly action: string;
  readonly attack_class: string | null;
  /** The whole record as JSON. */
  readonly record: string;
}

export interface StoredAccessLogRow extends AccessLogRow {
  readonly id: number;
}

/** A row's indexed columns in the table's order (the insert's, without `record`). */
export function indexedColumns(r: AccessLogRow) {
  return [
    r.trace_id,
    r.time,
    r.site_id,
    r.client_ip,
    r.method,
    r.host,
    r.path,
    r.status,
    r.action,
    r.attack_class,
  ] as const;
}

export type IndexedColumns = ReturnType<typeof indexedColumns>;

/** The columns a stored record is made whole with. */
export type RecordColumns = Pick<
  AccessLogRow,
  "trace_id" | "time" | "site_id" | "client_ip" | "method" | "host" | "path" | "status" | "action"
>;

/**
 * How the access log's rows travel as text and how the table's `record` column reads back: the
 * access log's line format (`lineFormat` in `mod/access_log/lines.ts`), given to the repository.
 */
export interface AccessLogFormat {
  /** Calls `row` with each row's parsed columns and its record as stored, in a batch of text. */
  eachRow(text: string, row: (columns: IndexedColumns, record: string) => void): void;
  /** The record's whole JSON from a row's columns and its stored record. */
  expand(columns: RecordColumns, stored: string): string;
}

/** Rows as read from the store, their records made whole by `format` (in place). */
export function expandRows<T extends AccessLogRow>(format: AccessLogFormat, rows: T[]): T[] {
  for (const r of rows) (r as { record: string }).record = format.expand(r, r.record);
  return rows;
}
