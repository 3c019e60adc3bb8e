/**
 * The one normalised path (engine/path_normalize.ts): the data-driven cases of
 * tests/testdata/path/normalize.json (path -> compared form per upstream kind), and the matching
 * helpers every path control uses.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import {
  normalizePath,
  pathIs,
  testPath,
  underPrefix,
  UPSTREAM_KINDS,
  type UpstreamKind,
} from "../../engine/path_normalize.ts";
import { foldedTwin } from "../../engine/path_match.ts";
import { compileRe2, type SharedMatcher } from "../../engine/re2.ts";

interface Case {
  readonly path: string;
  readonly all: string;
  readonly kinds?: Partial<Record<UpstreamKind, string>>;
}

const FILE = new URL("../testdata/path/normalize.json", import.meta.url);
const { cases } = JSON.parse(Deno.readTextFileSync(FILE)) as { cases: Case[] };

Deno.test("normalizePath() reads each path of the data file as each upstream kind does", () => {
  ok(cases.length > 40);
  for (const c of cases) {
    for (const kind of UPSTREAM_KINDS) {
      const n = normalizePath(c.path, kind);
      const got = n.problem === undefined ? n.key : `!${n.problem}`;
      assertEquals(got, c.kinds?.[kind] ?? c.all, `${c.path} as ${kind}`);
    }
  }
});

Deno.test("normalizePath() decides /x/../P, //P, /./P, /%2e/P and /%2fP like P for every kind", () => {
  for (const kind of UPSTREAM_KINDS) {
    for (const p of ["/x/../api/users", "//api/users", "/./api/users", "/%2e/api/users"]) {
      assertEquals(normalizePath(p, kind).key, "/api/users", `${p} as ${kind}`);
    }
    assertEquals(normalizePath("/%2fapi/users", kind).key, "/api/users", kind);
  }
});

Deno.test("normalizePath() keeps the case sent in its text and returns a plain path as it came", () => {
  const n = normalizePath("/Shop/Cart", "iis");
  assertEquals([n.text, n.key, n.fold, n.canonical], ["/Shop/Cart", "/shop/cart", true, true]);
  const plain = "/static/app.min.js";
  ok(normalizePath(plain, "generic").text === plain);
  assertEquals(normalizePath("/a%20b", "nginx").canonical, true, "a plain escape is canonical");
  for (const p of ["//a", "/a/./b", "/a/../b", "/a;x", "/a\\b", "/%2561", "/\uff41"]) {
    assertEquals(normalizePath(p, "generic").canonical, false, p);
  }
});

Deno.test("a trailing slash is ignored where the kind ignores it, in both directions", () => {
  const slash = normalizePath("/login/", "generic");
  assertEquals([slash.key, slash.alt], ["/login/", "/login"]);
  ok(pathIs(slash, "/login"));
  ok(pathIs(normalizePath("/login", "generic"), "/login/"));
  ok(!pathIs(normalizePath("/login/x", "generic"), "/login"));
  ok(underPrefix(normalizePath("/admin", "generic"), "/admin/"));
  ok(!underPrefix(normalizePath("/administrator", "generic"), "/admin/"));
  ok(pathIs(normalizePath("/LOGIN", "iis"), "/login"));
  ok(!pathIs(normalizePath("/LOGIN", "nginx"), "/login"));
});

Deno.test("underPrefix() compares case-insensitively only where the kind folds case", () => {
  ok(underPrefix(normalizePath("/ADMIN/x", "iis"), "/admin"));
  ok(underPrefix(normalizePath("/admin/x", "iis"), "/Admin"));
  ok(!underPrefix(normalizePath("/ADMIN/x", "apache"), "/admin"));
  ok(underPrefix(normalizePath("/Caf\u00c9/x", "node"), "/caf\u00e9"));
});

Deno.test("testPath() matches a pattern with capitals on a case-folding site through its twin", () => {
  const held: SharedMatcher[] = [];
  const r = compileRe2("^/Admin/[0-9]+$");
  ok(r.ok);
  held.push(r.matcher);
  const twin = foldedTwin("^/Admin/[0-9]+$", held);
  ok(twin !== undefined);
  assertEquals(foldedTwin("^/admin/[0-9]+$", held), undefined, "no capitals: no twin");
  ok(testPath(normalizePath("/ADMIN/12/", "generic"), r.matcher, twin));
  ok(testPath(normalizePath("/Admin/12", "java"), r.matcher, twin));
  ok(!testPath(normalizePath("/ADMIN/12", "java"), r.matcher, twin));
  for (const m of held) m.release();
});
