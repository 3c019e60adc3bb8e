/**
 * Structured logger: human-readable lines by default, one JSON object per line with
 * `--log-format json`. Field values under secret-looking keys are masked before writing.
 */
import { isSecretName } from "./redact.ts";

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFormat = "text" | "json";
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Masks values of keys that name secrets, recursively. */
export function maskSecrets(fields: LogFields): LogFields {
  const out: LogFields = {};
  for (const [key, value] of Object.entries(fields)) {
    if (isSecretName(key) && value !== undefined && value !== null && value !== "") {
      out[key] = "[masked]";
    } else if (
      value && typeof value === "object" && !Array.isArray(value) && !(value instanceof Error)
    ) {
      out[key] = maskSecrets(value as LogFields);
    } else if (value instanceof Error) {
      out[key] = { name: value.name, message: value.message, stack: value.stack };
    } else {
      out[key] = value;
    }
  }
  return out;
}

export interface LoggerOptions {
  format: LogFormat;
  level: LogLevel;
  /** Where finished lines go; defaults to stderr. */
  write?: (line: string) => void;
  now?: () => number;
}

const encoder = new TextEncoder();
function writeStderr(line: string): void {
  Deno.stderr.writeSync(encoder.encode(line + "\n"));
}

export function createLogger(options: LoggerOptions): Logger {
  const write = options.write ?? writeStderr;
  const now = options.now ?? Date.now;
  const min = ORDER[options.level];
  function log(level: LogLevel, message: string, fields?: LogFields): void {
    if (ORDER[level] < min) return;
    const masked = fields ? maskSecrets(fields) : {};
    const time = new Date(now()).toISOString();
    if (options.format === "json") {
      write(JSON.stringify({ time, level, msg: message, ...masked }));
      return;
    }
    let line = `${time} ${level.toUpperCase().padEnd(5)} ${message}`;
    for (const [key, value] of Object.entries(masked)) {
      if (value === undefined) continue;
      const text = typeof value === "string" ? value : JSON.stringify(value);
      line += ` ${key}=${text}`;
    }
    write(line);
  }
  return {
    debug: (m, f) => log("debug", m, f),
    info: (m, f) => log("info", m, f),
    warn: (m, f) => log("warn", m, f),
    error: (m, f) => log("error", m, f),
  };
}

/** A logger that keeps lines in memory; for tests that grep the log. */
export function createMemoryLogger(format: LogFormat = "text"): Logger & { lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger({ format, level: "debug", write: (l) => lines.push(l) });
  return Object.assign(logger, { lines });
}
