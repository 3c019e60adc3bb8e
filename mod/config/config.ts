/**
 * Loads `waf.yaml`: creates it with documented defaults when absent, parses it with a real
 * YAML parser and validates it, reporting every problem with its key path.
 */
import { parseDocument } from "yaml";
import { type Config, configSchema, parseListen } from "./config_schema.ts";
import { isKnownExpression, KNOWN_EXPRESSIONS } from "../identity/permissions.ts";
import { DEFAULT_CONFIG_YAML } from "./config_default.ts";
import { nearest } from "../core/nearest.ts";
import { missingProductionKeys } from "./production.ts";

export type { Config } from "./config_schema.ts";

/** One configuration problem: the dotted key path and what was expected. */
export interface ConfigProblem {
  readonly path: string;
  readonly message: string;
  /** Set where the specification names the failure (`ErrProductionStorageUnavailable`). */
  readonly code?: "ErrProductionStorageUnavailable";
}

/**
 * A configuration mistake found only while starting (it depends on the data directory, such as
 * a cluster node with neither a stored identity nor a join token): `waf serve` reports it like
 * the problems of `waf.yaml` itself and exits 2.
 */
export class ConfigProblemError extends Error {
  constructor(readonly problems: readonly ConfigProblem[]) {
    super(problems.map((p) => `${p.path}: ${p.message}`).join("; "));
    this.name = "ConfigProblemError";
  }
}

export type ConfigResult =
  | { kind: "ok"; config: Config }
  | { kind: "invalid"; problems: readonly ConfigProblem[] };

function joinPath(path: ReadonlyArray<PropertyKey>): string {
  let out = "";
  for (const part of path) {
    out += typeof part === "number" ? `[${part}]` : (out ? "." : "") + String(part);
  }
  return out || "(root)";
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/** Cross-field rules zod's per-key schema cannot express. */
function semanticProblems(config: Config): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const mgmt = parseListen(config.server.management.listen)!;
  if (!LOOPBACK.test(mgmt.hostname) && config.server.management.tls === "off") {
    problems.push({
      path: "server.management.tls",
      message:
        `expected "auto" or { cert_file, key_file }: the management listener binds the non-loopback address "${mgmt.hostname}" and must not run without TLS`,
    });
  }
  // An identifier the specification does not have grants nothing: a typo ("read:site") would
  // leave a role silently without the access it was written for.
  for (const [role, expressions] of Object.entries(config.apisec.permissions)) {
    expressions.forEach((e, i) => {
      if (isKnownExpression(e)) return;
      const near = nearest(e, KNOWN_EXPRESSIONS);
      problems.push({
        path: `apisec.permissions.${role}[${i}]`,
        message: `unknown permission "${e}": expected "*", "family:*" of a permission family ` +
          `or an identifier of the specification${near ? `; did you mean "${near}"?` : ""}`,
      });
    });
  }
  if (!config.apisec.permissions["admin"]) {
    problems.push({
      path: "apisec.permissions.admin",
      message: 'expected an "admin" role: the first account created at setup is an admin',
    });
  }
  return problems;
}

const WILDCARD = new Set(["0.0.0.0", "::", "[::]"]);

/** True when two listeners would claim the same port (port 0 picks a free one each). */
function clash(a: { hostname: string; port: number }, b: { hostname: string; port: number }) {
  if (a.port === 0 || a.port !== b.port) return false;
  return a.hostname === b.hostname || WILDCARD.has(a.hostname) || WILDCARD.has(b.hostname);
}

/**
 * What `waf serve` refuses in a configuration that is valid key by key: the production storage
 * profile without its database or key file, two listeners on one address, and OTA updates (this
 * build has no updater). `waf config check` runs the same function (and the same database probe,
 * `probeProductionStore`), so it passes nothing that `serve` would refuse.
 */
export function deploymentProblems(config: Config): ConfigProblem[] {
  const problems: ConfigProblem[] = [...missingProductionKeys(config)];
  const listeners = [
    ["server.data.listen", config.server.data.listen],
    ["server.data.https_listen", config.server.data.https_listen],
    ["server.management.listen", config.server.management.listen],
    ["cluster.listen", config.cluster.listen],
  ] as const;
  for (let i = 0; i < listeners.length; i++) {
    for (let j = i + 1; j < listeners.length; j++) {
      const [pathA, a] = listeners[i]!;
      const [pathB, b] = listeners[j]!;
      if (a === undefined || b === undefined) continue;
      if (clash(parseListen(a)!, parseListen(b)!)) {
        problems.push({
          path: pathB,
          message:
            `expected another address or port: "${b}" is also the address of ${pathA} ("${a}"), and the two listeners must be separate`,
        });
      }
    }
  }
  if (config.cluster.role === "node" && config.cluster.controller_url === undefined) {
    problems.push({
      path: "cluster.controller_url",
      message:
        'expected the controller\'s cluster listener, e.g. "https://controller.example:9444": a node needs it',
    });
  }
  if (config.update.ota.enabled) {
    problems.push({
      path: "update.ota.enabled",
      message:
        "expected false: this build has no updater worker, so OTA updates cannot be enabled (OTA_UPDATES_UNAVAILABLE)",
    });
  }
  return problems;
}

/** Unwraps defaults, prefaults and optionals down to the schema that holds the shape. */
function unwrap(schema: unknown): unknown {
  let current = schema as { _zod?: { def?: { innerType?: unknown } }; shape?: unknown };
  for (let i = 0; i < 8 && current && current.shape === undefined; i++) {
    const inner = current._zod?.def?.innerType;
    if (!inner) break;
    current = inner as typeof current;
  }
  return current;
}

/** The documented keys of the object at `path` in the configuration schema. */
function keysAt(path: ReadonlyArray<PropertyKey>): string[] {
  let schema = unwrap(configSchema) as { shape?: Record<string, unknown> };
  for (const part of path) {
    const next = schema?.shape?.[String(part)];
    if (next === undefined) return [];
    schema = unwrap(next) as typeof schema;
  }
  return Object.keys(schema?.shape ?? {});
}

/** Validates already-parsed YAML data. */
export function validateConfig(data: unknown): ConfigResult {
  const parsed = configSchema.safeParse(data ?? {});
  if (!parsed.success) {
    const problems: ConfigProblem[] = [];
    for (const issue of parsed.error.issues) {
      if (issue.code === "unrecognized_keys") {
        const known = keysAt(issue.path);
        for (const key of issue.keys) {
          const near = nearest(key, known);
          problems.push({
            path: joinPath([...issue.path, key]),
            message: `unknown key${near ? `: did you mean "${near}"?` : ""}${
              known.length ? ` Keys here: ${known.join(", ")}` : ""
            }`,
          });
        }
      } else if (issue.code === "invalid_key") {
        // A record key (a role name): zod says only "Invalid key in record"; its own check says why.
        const inner = issue.issues.map((i) => i.message).join("; ");
        problems.push({ path: joinPath(issue.path), message: inner || issue.message });
      } else {
        problems.push({ path: joinPath(issue.path), message: issue.message });
      }
    }
    return { kind: "invalid", problems };
  }
  const problems = semanticProblems(parsed.data);
  return problems.length ? { kind: "invalid", problems } : { kind: "ok", config: parsed.data };
}

/** Parses and validates YAML text. */
export function parseConfigText(text: string): ConfigResult {
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length) {
    return {
      kind: "invalid",
      problems: doc.errors.map((e) => ({
        path: "(yaml)",
        message: `${e.code}: ${e.message.split("\n")[0]}`,
      })),
    };
  }
  return validateConfig(doc.toJS());
}

/** Reads a config file; `undefined` when it does not exist. */
export async function readConfigFile(path: string): Promise<ConfigResult | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  }
  return parseConfigText(text);
}

/** Writes the commented default configuration (mode 0600, parent directories created). */
export async function writeDefaultConfig(path: string): Promise<void> {
  const slash = path.lastIndexOf("/");
  if (slash > 0) await Deno.mkdir(path.slice(0, slash), { recursive: true, mode: 0o700 });
  await Deno.writeTextFile(path, DEFAULT_CONFIG_YAML, { mode: 0o600, createNew: true });
}

/** The configuration with no file at all: every key at its default. */
export function defaultConfig(): Config {
  const result = validateConfig({});
  if (result.kind !== "ok") throw new Error("Default configuration is invalid");
  return result.config;
}

export { durationMs } from "../core/duration.ts";

/** Human-readable list of problems, one per line. */
export function formatProblems(problems: readonly ConfigProblem[]): string {
  return problems.map((p) => `  ${p.path}: ${p.message}`).join("\n");
}
