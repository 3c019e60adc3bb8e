/**
 * Where access-log batches are written: directly on this thread (tests, tools) or by a
 * writer thread with its own store connection (the running server), so the insert work and
 * its pauses stay off the data plane's event loop.
 */
import type { AccessLogRepo, AccessLogRow } from "./access_log_repo.ts";

export interface AccessLogWriter {
  /** Resolves with the number of rows written; rejects when the batch failed. */
  write(rows: AccessLogRow[]): Promise<number>;
  /** Retention: deletes rows older than `before` and all but the newest `keep`. */
  prune(before: number, keep: number): Promise<number>;
  close(): Promise<void>;
}

/** Writes on the calling thread. */
export function directWriter(repo: AccessLogRepo): AccessLogWriter {
  return {
    write: (rows) => {
      try {
        return Promise.resolve(repo.insertBatch(rows));
      } catch (err) {
        return Promise.reject(err);
      }
    },
    prune: (before, keep) => {
      try {
        return Promise.resolve(repo.prune(before, keep));
      } catch (err) {
        return Promise.reject(err);
      }
    },
    close: () => Promise.resolve(),
  };
}

type Reply =
  | { kind: "written"; id: number; written: number }
  | { kind: "failed"; id: number; error: string }
  | { kind: "closed" };

/** Writes on a worker thread that opens its own connection to the store at `path`. */
export function createWorkerWriter(path: string): AccessLogWriter {
  const worker = new Worker(new URL("./access_log_worker.ts", import.meta.url), {
    type: "module",
  });
  let next = 0;
  const pending = new Map<number, { resolve: (n: number) => void; reject: (e: Error) => void }>();
  let onClosed: (() => void) | undefined;
  worker.onmessage = (e: MessageEvent<Reply>) => {
    const m = e.data;
    if (m.kind === "closed") return onClosed?.();
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (m.kind === "written") p?.resolve(m.written);
    else p?.reject(new Error(`Access-log batch failed: ${m.error}`));
  };
  worker.postMessage({ kind: "open", path });
  let closing: Promise<void> | undefined;
  const request = (message: Record<string, unknown>): Promise<number> => {
    if (closing) return Promise.reject(new Error("The access-log writer is closed"));
    const id = ++next;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.postMessage({ ...message, id });
    });
  };
  return {
    write: (rows) => request({ kind: "write", rows }),
    prune: (before, keep) => request({ kind: "prune", before, keep }),
    close() {
      closing ??= new Promise<void>((resolve) => {
        // Messages are handled in order, so every posted batch is written before "close".
        onClosed = () => {
          worker.terminate();
          resolve();
        };
        worker.postMessage({ kind: "close" });
      });
      return closing;
    },
  };
}
