/**
 * Conformance audit against the specification: every concrete name SPEC.md gives (API paths and
 * methods, permission identifiers, error codes and statuses, `waf.yaml` keys and defaults, CLI
 * commands and flags, limits, health probes, setup artefacts) is read from the document itself
 * and checked against the code: the composed route inventory, the permission list, the config
 * schema, the CLI command table, the constants, and answers of an in-process server. Prints one
 * line per check and exits 1 when any does not match. The results of the last audit are in
 * docs/spec_audit.md.
 *
 * ```sh
 * deno run -A scripts/spec_audit.ts [--spec ../shared/SPEC.md] [--only-failures] [--json]
 * ```
 */
import { parseArgs } from "node:util";
import { COMMANDS } from "../cli.ts";
import { deploymentProblems, parseConfigText, validateConfig } from "../mod/config/config.ts";
import { DEFAULT_CONFIG_YAML } from "../mod/config/config_default.ts";
import { PERMISSIONS } from "../mod/identity/permissions.ts";
import type { RouteDef } from "../routes/api/route.ts";
import { startTestServer } from "../tests/_helpers/server.ts";
import { LIMIT_CHECKS, probePublicPrometheus, probeServer } from "./spec_audit_probes.ts";
import { type Check, type Finding, sections, tableRows, ticks } from "./spec_audit_text.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"]);

/** `/api/users/{id}` → a regex over registered Hono paths (`/api/users/:id`). */
function pathRegex(specPath: string): RegExp {
  const escaped = specPath.replace(/[.+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, ":[A-Za-z_]+");
  return new RegExp(`^${escaped}$`);
}

/** Section 4.1-4.3: method, path, access kind and permission of each row, against the routes. */
function checkEndpoints(spec: Map<string, string>, routes: readonly RouteDef[]): Finding[] {
  const out: Finding[] = [];
  const areas = [
    { id: "4.1", kind: ["public"] },
    { id: "4.2", kind: ["bootstrap", "node"] },
    { id: "4.3", kind: ["permission"] },
  ];
  for (const area of areas) {
    for (const cells of tableRows(spec.get(area.id) ?? "")) {
      const methods = cells[0]!.split(/[ ,]+/).filter((m) => METHODS.has(m));
      const several = cells[0]!.includes("several");
      if (methods.length === 0 && !several) continue;
      const perms = area.id === "4.3" ? ticks(cells[2] ?? "") : [];
      for (const path of ticks(cells[1]!).filter((p) => p.startsWith("/"))) {
        const re = pathRegex(path);
        const at = routes.filter((r) => re.test(r.path));
        const name = `${several ? "(several)" : methods.join(",")} ${path}`;
        if (at.length === 0) {
          out.push({ area: `endpoint ${area.id}`, name, ok: false, detail: "no route registered" });
          continue;
        }
        const wanted = several ? [...new Set(at.map((r) => r.method))] : methods;
        for (const m of wanted) {
          const r = at.find((x) => x.method === m);
          const label = `${m} ${path}`;
          if (!r) {
            out.push({
              area: `endpoint ${area.id}`,
              name: label,
              ok: false,
              detail: `method not registered (has ${at.map((x) => x.method).join(", ")})`,
            });
            continue;
          }
          const problems: string[] = [];
          if (!area.kind.includes(r.access.kind)) {
            problems.push(`access is ${r.access.kind}, expected ${area.kind.join(" or ")}`);
          }
          if (perms.length > 0 && r.access.kind === "permission") {
            // "read:x / write:x": GET reads, the rest writes; one identifier: that one.
            const expected = perms.length === 1 ? perms[0]! : m === "GET" ? perms[0]! : perms[1]!;
            if (r.access.permission !== expected) {
              problems.push(`permission ${r.access.permission}, expected ${expected}`);
            }
          }
          out.push({
            area: `endpoint ${area.id}`,
            name: label,
            ok: problems.length === 0,
            detail: problems.join("; ") ||
              (r.access.kind === "permission" ? r.access.permission : r.access.kind),
          });
        }
      }
    }
  }
  return out;
}

/** Section 5's identifier table against the one list routes and tokens use. */
function checkPermissions(spec: Map<string, string>): Finding[] {
  const listed = tableRows(spec.get("5") ?? "").flatMap((cells) =>
    cells[0]!.split(",").map((s) => s.trim()).filter((s) => /^[a-z_]+:[a-z_]+$/.test(s))
  );
  const code = new Set<string>(PERMISSIONS);
  const out: Finding[] = listed.map((p) => ({
    area: "permission",
    name: p,
    ok: code.has(p),
    detail: code.has(p) ? "in PERMISSIONS" : "missing from mod/identity/permissions.ts",
  }));
  for (const p of PERMISSIONS) {
    if (!listed.includes(p)) {
      out.push({ area: "permission", name: p, ok: false, detail: "in the code, not in the spec" });
    }
  }
  return out;
}

/** Source text of the runtime (no tests, no scripts), for looking names up. */
async function runtimeSource(): Promise<string> {
  const parts: string[] = [];
  for (const dir of ["app", "cli", "db", "engine", "mod", "routes"]) {
    for await (const f of walk(`${ROOT}${dir}`)) parts.push(await Deno.readTextFile(f));
  }
  parts.push(await Deno.readTextFile(`${ROOT}main.ts`), await Deno.readTextFile(`${ROOT}cli.ts`));
  return parts.join("\n");
}

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) yield* walk(p);
    else if (e.name.endsWith(".ts")) yield p;
  }
}

/** Section 7: each code is raised somewhere in the runtime, with its status where one is given. */
function checkErrorCodes(spec: Map<string, string>, source: string): Finding[] {
  const out: Finding[] = [];
  for (const cells of tableRows(spec.get("7") ?? "")) {
    const code = ticks(cells[0]!)[0];
    if (!code) continue;
    const status = /\b([1-5]\d\d)\b/.exec(cells[2] ?? "")?.[1];
    const found = source.includes(`"${code}"`) || source.includes(code);
    const withStatus = status === undefined ||
      new RegExp(`AppError\\(\\s*${status},\\s*"${code}"`).test(source);
    out.push({
      area: "error code",
      name: status ? `${code} ${status}` : code,
      ok: found && withStatus,
      detail: !found ? "never raised" : !withStatus ? `not raised with ${status}` : "raised",
    });
  }
  return out;
}

/** The value at a dotted path of a validated default configuration, or a miss. */
function at(obj: unknown, path: string): { found: boolean; value?: unknown } {
  let cur = obj as Record<string, unknown> | undefined;
  for (const part of path.split(".")) {
    if (!cur || typeof cur !== "object" || !Object.hasOwn(cur, part)) return { found: false };
    cur = cur[part] as Record<string, unknown>;
  }
  return { found: true, value: cur };
}

/** Whether `waf.yaml` accepts `path: value` (value given as the spec writes it). */
function accepts(path: string, value: unknown): { ok: boolean; message: string } {
  const doc: Record<string, unknown> = {};
  let cur = doc;
  const parts = path.split(".");
  parts.slice(0, -1).forEach((p) => cur = (cur[p] = {}) as Record<string, unknown>);
  cur[parts.at(-1)!] = value;
  const r = validateConfig(doc);
  if (r.kind !== "ok") return { ok: false, message: r.problems.map((p) => p.path).join(", ") };
  const deploy = deploymentProblems(r.config);
  return deploy.length
    ? { ok: false, message: deploy.map((p) => p.code ?? p.path).join(", ") }
    : { ok: true, message: "accepted" };
}

/** Config keys and defaults named in sections 1, 2.7 and 2.8, checked against the schema. */
function checkConfig(spec: Map<string, string>, text: string): Finding[] {
  const out: Finding[] = [];
  const valid = validateConfig({});
  if (valid.kind !== "ok") throw new Error("the empty configuration does not validate");
  const defaults = valid.config as unknown;
  const seen = new Set<string>();
  // Every `a.b.c` or `a.b: value` in backticks whose root is a top-level key.
  const roots = new Set(Object.keys(defaults as object));
  for (const t of ticks(text)) {
    const m = /^([a-z_]+(?:\.[a-z_]+)+)(?::\s*(.+))?$/.exec(t);
    if (!m || !roots.has(m[1]!.split(".")[0]!) || seen.has(t)) continue;
    seen.add(t);
    const [, path, value] = m;
    if (value === undefined) {
      const hit = at(defaults, path!);
      // Optional blocks (storage.postgresql, storage.redis) have no default: the schema must
      // still accept them, which the accepts() call on a minimal value shows.
      out.push({
        area: "config key",
        name: path!,
        ok: hit.found || optionalBlock(path!),
        detail: hit.found ? `default ${JSON.stringify(hit.value)}` : "optional block",
      });
      continue;
    }
    const parsed = value === "true" ? true : value === "false" ? false : value;
    const r = accepts(path!, parsed);
    // The spec names two values the service must refuse.
    const refused = /redis$/.test(t) || /production$/.test(t);
    out.push({
      area: "config value",
      name: t,
      ok: refused ? !r.ok : r.ok,
      detail: r.message,
    });
  }
  for (const cells of tableRows(spec.get("2.8") ?? "")) {
    const key = ticks(cells[0]!)[0] ?? cells[0]!.trim();
    if (!/^[a-z_]+$/.test(key)) continue;
    const want = cells[1]!.trim().replace(/`/g, "").replace(/^empty string$/, "");
    const hit = at(defaults, `update.ota.${key}`);
    const got = hit.found ? String(hit.value) : undefined;
    out.push({
      area: "config default",
      name: `update.ota.${key}`,
      ok: got === want,
      detail: `spec ${JSON.stringify(want)}, code ${JSON.stringify(got)}`,
    });
  }
  for (const cells of tableRows(spec.get("2.7") ?? "")) {
    const block = cells[0]!.trim();
    const keys = ticks(cells[1]!).filter((k) => /^[a-z_]+$/.test(k) && !CLAIMS.has(k));
    const base = block === "validation schema entry"
      ? "apisec.validation.schemas"
      : `apisec.${block}`;
    for (const k of keys) out.push(apisecKey(base, k));
  }
  const roleMap = JSON.stringify(at(defaults, "apisec.permissions").value);
  out.push({
    area: "config default",
    name: "apisec.permissions",
    ok: roleMap === JSON.stringify({ admin: ["*"], readonly: ["read:*", "read:cluster"] }),
    detail: roleMap,
  });
  // The file written on first start must say what the schema does when a key is left out.
  const written = parseConfigText(DEFAULT_CONFIG_YAML);
  const same = written.kind === "ok" && JSON.stringify(written.config) === JSON.stringify(defaults);
  out.push({
    area: "config default",
    name: "waf.yaml written on first start",
    ok: same,
    detail: same ? "equals the schema defaults" : "differs from the schema defaults",
  });
  const listen = String(at(defaults, "server.management.listen").value);
  out.push({
    area: "config default",
    name: "server.management.listen port 9443",
    ok: listen.endsWith(":9443"),
    detail: listen,
  });
  return out;
}

/** Token claims the auth row names next to its keys (`issuer` checks `iss`, ...). */
const CLAIMS = new Set(["iss", "aud", "exp", "nbf", "exp`/`nbf"]);

const OPTIONAL_BLOCKS = new Set(["storage.postgresql", "storage.redis"]);
function optionalBlock(path: string): boolean {
  return OPTIONAL_BLOCKS.has(path);
}

/** A key of an `apisec` block: `waf.yaml` and the API share one schema, so one parse shows it. */
function apisecKey(base: string, key: string): Finding {
  const name = `${base}.${key}`;
  const r = validateConfig({ apisec: apisecProbe(base, key) });
  const unknown = r.kind === "invalid" && r.problems.some((p) => p.path.endsWith(key));
  return { area: "apisec key", name, ok: !unknown, detail: unknown ? "unknown key" : "accepted" };
}

/** A document with `key` set to something of a plausible type inside `base`. */
function apisecProbe(base: string, key: string): Record<string, unknown> {
  const samples: Record<string, unknown> = {
    enabled: false,
    sample_limit: 100,
    ignore_prefixes: ["/static/"],
    schemas: [],
    id: "probe",
    method: "GET",
    path_pattern: "^/x$",
    required_params: [],
    required_headers: [],
    max_body_bytes: 0,
    requests: 10,
    window: "1m",
    jwks_url: "https://issuer.example/jwks.json",
    jwks_cache_file: "/tmp/jwks.json",
    jwks_refresh_interval: "10m",
  };
  const value = samples[key] ?? null;
  if (base === "apisec.validation.schemas") {
    return {
      validation: { schemas: [{ id: "probe", method: "GET", path_pattern: "^/x$", [key]: value }] },
    };
  }
  if (base === "apisec.rate_limits") {
    return {
      rate_limits: [{
        id: "probe",
        method: "GET",
        path_pattern: "^/x$",
        requests: 1,
        window: "1m",
        [key]: value,
      }],
    };
  }
  const block = base.split(".")[1]!;
  return { [block]: { [key]: value } };
}

/** Every `waf ...` command the spec names, and each `--flag` in its row, against cli.ts. */
function checkCli(text: string): Finding[] {
  const out: Finding[] = [];
  const seen = new Set<string>();
  for (const line of text.split("\n")) {
    for (const t of ticks(line)) {
      const m = /^waf ((?:[a-z][a-z-]*)(?: [a-z][a-z-]*)*)/.exec(t);
      if (!m) continue;
      // `waf crp verify`, `stage`, ... names several verbs in one row.
      const verbs = line.startsWith("| `waf crp verify`")
        ? ["verify", "stage", "activate", "rollback"]
        : [];
      const words = m[1]!.split(" ");
      const names = verbs.length ? verbs.map((v) => ["crp", v]) : [words];
      for (const w of names) {
        const spec = COMMANDS.find((c) =>
          c.words.join(" ") === w.slice(0, c.words.length).join(" ")
        );
        const key = w.join(" ");
        if (!seen.has(key)) {
          seen.add(key);
          out.push({
            area: "cli command",
            name: `waf ${key}`,
            ok: !!spec,
            detail: spec ? "registered" : "missing",
          });
        }
        if (!spec) continue;
        const flags = line.startsWith("|")
          ? line.match(/--[a-z0-9-]+/g) ?? []
          : t.match(/--[a-z0-9-]+/g) ?? [];
        for (const f of new Set(flags)) {
          const fk = `waf ${spec.words.join(" ")} ${f}`;
          if (seen.has(fk)) continue;
          seen.add(fk);
          out.push({
            area: "cli flag",
            name: fk,
            ok: spec.usage.includes(f),
            detail: spec.usage.includes(f) ? "in usage" : "not in usage",
          });
        }
      }
    }
  }
  return out;
}

/** Names that must appear in the runtime exactly (header, variable, file). */
function checkNames(source: string): Finding[] {
  const names: Array<[string, RegExp]> = [
    ["X-WAF-Setup-Token header", /x-waf-setup-token/i],
    ["WAF_SETUP_TOKEN variable", /"WAF_SETUP_TOKEN"/],
    ["setup.url file", /setup\.url/],
    ["Authorization: Bearer", /Bearer /],
    ["traceId on the block page", /traceId/],
  ];
  return names.map(([name, re]) => ({
    area: "name",
    name,
    ok: re.test(source),
    detail: re.test(source) ? "present" : "absent",
  }));
}

/**
 * Operations 4.3 names without a path: the 2FA lifecycle next to `/2fa/setup` ("further
 * operations named enable, disable and recover"), under the same user.
 */
function checkNamedOperations(text: string, routes: readonly RouteDef[]): Finding[] {
  const m = /operations named ([a-z]+), ([a-z]+) and ([a-z]+)/.exec(text);
  return (m ? m.slice(1) : []).map((op) => {
    const r = routes.find((x) => x.path === `/api/users/:id/2fa/${op}`);
    return {
      area: "endpoint 4.3",
      name: `2FA ${op}`,
      ok: r !== undefined && r.access.kind === "permission" &&
        r.access.permission === "write:users",
      detail: r ? `${r.method} ${r.path}` : "no route",
    };
  });
}

async function main(): Promise<number> {
  const args = parseArgs({
    options: {
      spec: { type: "string", default: `${ROOT}../shared/SPEC.md` },
      "only-failures": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
    },
  }).values;
  let text: string;
  try {
    text = await Deno.readTextFile(args.spec!);
  } catch (err) {
    console.error(`Cannot read the specification at "${args.spec}": ${err}; pass --spec PATH`);
    return 2;
  }
  const spec = sections(text);
  const source = await runtimeSource();
  await using server = await startTestServer({
    config: { apisec: { management_api: { enabled: true } } },
  });
  const findings: Finding[] = [
    ...checkEndpoints(spec, server.routes),
    ...checkNamedOperations(text, server.routes),
    ...checkPermissions(spec),
    ...checkErrorCodes(spec, source),
    ...checkConfig(spec, text),
    ...checkCli(text),
    ...checkNames(source),
    ...LIMIT_CHECKS.map((c: Check) => c()),
    ...await probeServer(server),
    await probePublicPrometheus(),
  ];
  const shown = args["only-failures"] ? findings.filter((f) => !f.ok) : findings;
  if (args.json) console.log(JSON.stringify(shown, null, 2));
  else {
    for (const f of shown) {
      console.log(
        `${f.ok ? "ok  " : "FAIL"}  ${f.area.padEnd(16)} ${f.name.padEnd(48)} ${f.detail}`,
      );
    }
    const failed = findings.filter((f) => !f.ok).length;
    console.log(`\n${findings.length} checks, ${failed} mismatches`);
  }
  return findings.some((f) => !f.ok) ? 1 : 0;
}

if (import.meta.main) Deno.exit(await main());
