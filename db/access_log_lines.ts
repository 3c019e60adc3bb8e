/**
 * Access-log rows as text, the way data-plane workers hand them over: two lines per row, the
 * indexed columns as a JSON array, then the record's JSON as the store keeps it. A batch is one
 * string, which `postMessage` copies as a block of bytes (the worker to the main thread, the main
 * thread to the writer thread), where an array of row objects is cloned field by field and the
 * records themselves would be cloned object by object (docs/data-plane.md, "Workers"). Neither
 * line can hold a raw line break: `JSON.stringify` escapes them.
 */
import { type AccessLogRow, indexedColumns } from "./access_log_repo.ts";

/** A row's two lines. */
export function rowLines(r: AccessLogRow): string {
  return JSON.stringify(indexedColumns(r)) + "\n" + r.record + "\n";
}

/** Calls `fn` with each row's parsed columns and its record's JSON, in a batch of {@link rowLines}. */
export function eachRowLine(
  text: string,
  fn: (columns: ReturnType<typeof indexedColumns>, record: string) => void,
): void {
  let at = 0;
  while (at < text.length) {
    const a = text.indexOf("\n", at);
    const b = text.indexOf("\n", a + 1);
    if (a < 0 || b < 0) break;
    fn(JSON.parse(text.slice(at, a)), text.slice(a + 1, b));
    at = b + 1;
  }
}

/** The rows of a batch of {@link rowLines}. */
export function parseRowLines(text: string): AccessLogRow[] {
  const rows: AccessLogRow[] = [];
  eachRowLine(text, (c, record) =>
    rows.push({
      trace_id: c[0],
      time: c[1],
      site_id: c[2],
      client_ip: c[3],
      method: c[4],
      host: c[5],
      path: c[6],
      status: c[7],
      action: c[8],
      attack_class: c[9],
      record,
    }));
  return rows;
}
