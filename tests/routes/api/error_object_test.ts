/**
 * The error object (specification 2.5: `code`, `message`, `trace_id`, `event_id`) on every guarded
 * route of a real server, for every kind of bad request a client can send: no CSRF value, no
 * permission, malformed JSON, a body of the wrong type, fields of the wrong type, an unknown id,
 * filters of the wrong type. Routes added later are swept too (they come from `server.routes`).
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { sweepErrorObjects } from "../../_helpers/error_sweep.ts";
import { ADMIN, completeSetup, createUser, login } from "../../_helpers/identity.ts";
import { startTestServer } from "../../_helpers/server.ts";

Deno.test("every guarded route answers bad requests with the error object and the right status, never a 5xx", async () => {
  await using s = await startTestServer();
  await completeSetup(s);
  const admin = await login(s, ADMIN.username, ADMIN.password);
  await createUser(s, "viewer", "Glacier-Moth-42", "readonly");
  const viewer = await login(s, "viewer", "Glacier-Moth-42");
  const results = await sweepErrorObjects(s, s.routes, { admin, viewer });
  ok(results.length > 400, `${results.length} checks`);
  for (
    const area of ["missing CSRF", "no permission", "malformed JSON", "unknown id", "bad query"]
  ) {
    ok(results.some((r) => r.area === area), `${area} is swept`);
  }
  assertEquals(
    results.filter((r) => !r.ok).map((r) => `${r.area}: ${r.name}: ${r.detail}`),
    [],
  );
});
