/**
 * The access-log writer thread: owns its own connection to the store and inserts the batches
 * the main thread posts, so SQLite work never stalls the data plane's event loop. Started by
 * `createWorkerWriter` in `db/access_log_writer.ts`; `write` and `prune` messages go in, and
 * each answers `{id, written}` (rows inserted or deleted) or `{id, error}`.
 */
/// <reference lib="deno.worker" />
import { DatabaseSync } from "node:sqlite";
import { type AccessLogRow, createAccessLogRepo } from "./access_log_repo.ts";

let repo: ReturnType<typeof createAccessLogRepo> | undefined;
let db: DatabaseSync | undefined;

type Message =
  | { kind: "open"; path: string }
  | { kind: "write"; id: number; rows: AccessLogRow[] }
  | { kind: "prune"; id: number; before: number; keep: number }
  | { kind: "read"; id: number; afterId: number; limit: number }
  | { kind: "cursor"; id: number; name: string }
  | { kind: "save-cursor"; id: number; name: string; lastId: number; now: number }
  | { kind: "close" };

self.onmessage = (e: MessageEvent<Message>) => {
  const m = e.data;
  if (m.kind === "open") {
    db = new DatabaseSync(m.path, { timeout: 5000 });
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    repo = createAccessLogRepo(db);
    return;
  }
  if (m.kind === "close") {
    db?.close();
    db = undefined;
    self.postMessage({ kind: "closed" });
    return;
  }
  try {
    const written = m.kind === "prune"
      ? repo!.pruneSlice(m.before, m.keep)
      : m.kind === "read"
      ? repo!.readAfter(m.afterId, m.limit)
      : m.kind === "cursor"
      ? repo!.cursor(m.name)
      : m.kind === "save-cursor"
      ? repo!.saveCursor(m.name, m.lastId, m.now)
      : repo!.insertBatch(m.rows);
    self.postMessage({ kind: "written", id: m.id, written });
  } catch (err) {
    self.postMessage({ kind: "failed", id: m.id, error: String(err) });
  }
};
