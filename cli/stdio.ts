/**
 * The one place the command line writes to its standard streams (main.ts hands these writers to
 * every command as `deps.stdout` / `deps.stderr`). A stream whose reader went away
 * (`waf help | head -1`, a closed log pipe) is dropped quietly: the command goes on, nothing is
 * printed about it, and the exit code stays the command's own.
 */

const encoder = new TextEncoder();

/** What a writer needs of `Deno.stdout` / `Deno.stderr`. */
export interface SyncSink {
  writeSync(bytes: Uint8Array): number;
}

/**
 * A writer to `sink` that writes every byte (a pipe may take part of a write) and, once the
 * reading end is closed (`BrokenPipe`), drops this and every later text.
 */
export function streamWriter(sink: SyncSink): (text: string) => void {
  let closed = false;
  return (text) => {
    if (closed) return;
    let bytes = encoder.encode(text);
    try {
      while (bytes.length > 0) bytes = bytes.subarray(sink.writeSync(bytes));
    } catch (err) {
      if (!(err instanceof Deno.errors.BrokenPipe)) throw err;
      closed = true;
    }
  };
}
