/**
 * A size-rotated log file: `waf serve` appends every log line to `<data-dir>/logs/waf.log` so
 * that `waf logs pack` has runtime logs to collect. When a write would pass `maxBytes`, the
 * file becomes `waf.log.1`, older ones shift up, and the oldest beyond `keep` is deleted.
 * Writes are synchronous because the logger's write function is; lines are short.
 */
export interface LogFileOptions {
  /** Directory of the log files (created mode 0700). */
  readonly dir: string;
  readonly name?: string;
  readonly maxBytes?: number;
  /** How many rotated files to keep besides the current one. */
  readonly keep?: number;
}

export interface LogFile {
  write(line: string): void;
  close(): void;
}

export const LOG_FILE_NAME = "waf.log";
export const LOG_MAX_BYTES = 10 * 1024 * 1024;
export const LOG_KEEP = 5;

const encoder = new TextEncoder();

export function openLogFile(options: LogFileOptions): LogFile {
  const name = options.name ?? LOG_FILE_NAME;
  const maxBytes = options.maxBytes ?? LOG_MAX_BYTES;
  const keep = options.keep ?? LOG_KEEP;
  const path = `${options.dir}/${name}`;
  Deno.mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  const open = () => Deno.openSync(path, { append: true, create: true, mode: 0o600 });
  let file: Deno.FsFile | undefined = open();
  let size = file.statSync().size;

  function rotate(): void {
    file?.close();
    for (let i = keep; i >= 1; i--) {
      const from = i === 1 ? path : `${path}.${i - 1}`;
      try {
        if (i === keep) Deno.removeSync(`${path}.${keep}`);
      } catch { /* nothing to drop yet */ }
      try {
        Deno.renameSync(from, `${path}.${i}`);
      } catch { /* that generation does not exist yet */ }
    }
    file = open();
    size = 0;
  }

  return {
    write(line: string): void {
      if (!file) return;
      const bytes = encoder.encode(line.endsWith("\n") ? line : line + "\n");
      if (size > 0 && size + bytes.length > maxBytes) {
        if (keep > 0) rotate();
        else {
          file.truncateSync(0);
          size = 0;
        }
      }
      try {
        file.writeSync(bytes);
        size += bytes.length;
      } catch { /* a full disk must not stop the server; stderr still has the line */ }
    },
    close(): void {
      file?.close();
      file = undefined;
    },
  };
}
