import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import {
  grants,
  PERMISSIONS,
  permissionsOf,
  uncovered,
  validateRole,
} from "../../../mod/identity/permissions.ts";

const roles = { admin: ["*"], readonly: ["read:*", "read:cluster"], auditor: ["read:audit"] };

Deno.test("grants() treats * as everything", () => {
  for (const p of PERMISSIONS) ok(grants(["*"], p), p);
});

Deno.test("grants() treats family:* as every identifier with that prefix", () => {
  ok(grants(["read:*"], "read:sites"));
  ok(grants(["read:*"], "read:audit"));
  ok(!grants(["read:*"], "write:sites"));
  ok(!grants(["read:*"], "manage:api_tokens"));
  ok(grants(["write:*"], "write:users"));
  // The prefix includes the colon: "read:*" is not "readers:...".
  ok(!grants(["read:*"], "readers:x"));
});

Deno.test("grants() otherwise needs an exact match", () => {
  ok(grants(["read:audit"], "read:audit"));
  ok(!grants(["read:audit"], "read:audits"));
  ok(!grants(["read:audit"], "read:aud"));
  ok(!grants(["Read:audit"], "read:audit"));
  ok(!grants([], "read:audit"));
});

Deno.test("permissionsOf() gives nothing for a role the configuration does not have", () => {
  assertEquals(permissionsOf(roles, "auditor"), ["read:audit"]);
  assertEquals(permissionsOf(roles, "ghost"), []);
  assertEquals(permissionsOf(roles, "constructor"), []);
  assertEquals(permissionsOf(roles, "__proto__"), []);
});

Deno.test("validateRole() accepts exactly a configured key", () => {
  for (const r of Object.keys(roles)) assertEquals(validateRole(roles, r), { ok: true });
});

Deno.test("validateRole() refuses empty, unknown and case-folded roles", () => {
  const reason = (r: string) => {
    const v = validateRole(roles, r);
    if (v.ok) throw new Error(`expected ${JSON.stringify(r)} to be refused`);
    return v.reason;
  };
  assertMatch(reason(""), /empty/);
  assertMatch(reason("ghost"), /not a configured role/);
  assertMatch(reason("Admin"), /not a configured role/);
  assertMatch(reason("ADMIN"), /not a configured role/);
  assertMatch(reason("toString"), /not a configured role/);
});

Deno.test("validateRole() refuses *, / and : anywhere", () => {
  for (const r of ["*", "admin*", "ad/min", "read:*", ":admin", "admin/"]) {
    ok(!validateRole({ ...roles, [r]: ["*"] }, r).ok, r);
  }
});

Deno.test("validateRole() refuses leading, trailing and embedded whitespace, Cc and Cf characters", () => {
  const odd = [
    " admin",
    "admin ",
    "ad min",
    "\u00a0admin",
    "admin\u2003",
    "ad\u200bmin",
    "\ufeffadmin",
    "admin\u0000",
    "ad\tmin",
  ];
  for (const r of odd) {
    // Even a configured key with such characters is refused: there is no trimming.
    const check = validateRole({ ...roles, [r]: ["*"] }, r);
    ok(!check.ok, JSON.stringify(r));
  }
});

Deno.test("PERMISSIONS is exactly the specification's identifier list (section 5), nothing invented", () => {
  const spec = `read:sites write:sites read:rules write:rules read:protection write:protection
    read:threat_intel write:threat_intel read:edge write:edge read:ai write:ai use:ai approve:ai
    read:cluster write:cluster read:system write:system manage:api_tokens read:users write:users
    read:logs read:monitor read:audit read:realtime read:ops write:ops read:storage write:storage
    read:apisec`.split(/\s+/);
  assertEquals([...PERMISSIONS], spec);
  for (const invented of ["write:apisec", "read:notifications", "write:notifications"]) {
    ok(!(PERMISSIONS as readonly string[]).includes(invented), invented);
  }
});

Deno.test("the AI identifiers are known, and the default roles give admin all four and readonly read:ai only", () => {
  const ai = ["read:ai", "write:ai", "use:ai", "approve:ai"];
  for (const p of ai) ok((PERMISSIONS as readonly string[]).includes(p), p);
  const defaults = { admin: ["*"], readonly: ["read:*", "read:cluster"] };
  assertEquals(ai.filter((p) => grants(permissionsOf(defaults, "admin"), p)), ai);
  assertEquals(ai.filter((p) => grants(permissionsOf(defaults, "readonly"), p)), ["read:ai"]);
});

Deno.test("uncovered() lists what a grant would add beyond what the grantor holds", () => {
  assertEquals(uncovered(["read:users", "write:users"], ["*"]), ["*"]);
  assertEquals(uncovered(["read:users", "write:users"], ["read:*", "read:cluster"]), [
    "read:*",
    "read:cluster",
  ]);
  assertEquals(uncovered(["read:*", "write:users"], ["read:*", "read:cluster"]), []);
  assertEquals(uncovered(["write:*"], ["read:users", "write:users"]), ["read:users"]);
  assertEquals(uncovered(["*"], ["*", "read:*", "write:users"]), []);
  assertEquals(uncovered([], []), []);
});
