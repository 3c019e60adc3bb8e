/**
 * Reads from a Deno connection like `conn.read`, without the connection's per-read bookkeeping.
 *
 * `Deno.Conn.read` adds each read's promise to a `Set` on the connection and deletes it when the
 * read settles (the set is only there for `unref()`). On a keep-alive connection the connection
 * object, and with it the set, soon lives in V8's old generation, and V8 gives a set's table a
 * new one in the table's own generation whenever it grows or shrinks: every read then leaves
 * garbage in the old generation, which only a mark-compact (holding the event loop) frees; with
 * two reads a proxied request that was most of the data plane's old-generation growth (see
 * docs/bench/2026-11-26-second-session-tail.md).
 *
 * The read here is the operation `conn.read` awaits itself (`core.read(rid, buffer)`), with the
 * same results: the bytes read, `null` at the end of the stream, 0 for an empty buffer, and the
 * same rejection when the connection is closed under a pending read. It needs Deno's internal
 * handle (`Deno[Deno.internal].core`) and the connection's resource id (its own
 * `Symbol(Deno.internal.rid)` property); where either is missing (another Deno version, a
 * wrapped or fake connection) it is `conn.read` itself. `unref()` does not apply to these reads
 * (the data plane never unrefs its connections).
 */

/** Reads into `buf`: the byte count, or `null` at the end of the stream. */
export type ConnRead = (buf: Uint8Array) => Promise<number | null>;

type CoreRead = (rid: number, buf: Uint8Array) => Promise<number>;

const coreRead: CoreRead | undefined = (() => {
  try {
    const internal = (Deno as unknown as Record<symbol | string, unknown>)[
      (Deno as unknown as { internal: symbol }).internal
    ] as { core?: { read?: unknown } } | undefined;
    const read = internal?.core?.read;
    return typeof read === "function" ? (read as CoreRead) : undefined;
  } catch {
    return undefined;
  }
})();

/** The connection's resource id, where Deno keeps it as its own `Deno.internal.rid` symbol. */
function resourceId(conn: object): number | undefined {
  for (const key of Object.getOwnPropertySymbols(conn)) {
    if (key.description !== "Deno.internal.rid") continue;
    const rid = (conn as Record<symbol, unknown>)[key];
    return typeof rid === "number" ? rid : undefined;
  }
  return undefined;
}

/** Whether {@link connReader} reads `conn` directly (false: it falls back to `conn.read`). */
export function readsDirectly(conn: Deno.Conn): boolean {
  return coreRead !== undefined && resourceId(conn) !== undefined;
}

/** A reader for `conn` (made once per connection; see the module's comment). */
export function connReader(conn: Deno.Conn): ConnRead {
  const rid = coreRead === undefined ? undefined : resourceId(conn);
  if (coreRead === undefined || rid === undefined) return (buf) => conn.read(buf);
  const read = coreRead;
  return async (buf) => {
    if (buf.length === 0) return 0;
    const n = await read(rid, buf);
    return n === 0 ? null : n;
  };
}
