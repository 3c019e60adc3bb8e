/** `GET /api/system/controllers` on the temporary profile: this one process. */
import { assertEquals } from "../../_helpers/assert.ts";
import { adminAndViewer, errorCode } from "../../_helpers/api_access.ts";
import { callJson } from "../../_helpers/identity.ts";
import { VERSION } from "../../../mod/core/version.ts";

Deno.test("GET /api/system/controllers lists this process on the temporary profile; it needs read:system", async () => {
  const { server, viewer } = await adminAndViewer({}, ["apiAccess", "dataPlane"]);
  await using _ = server;
  const r = await callJson(server, "GET", "/api/system/controllers", { session: viewer });
  assertEquals(r.status, 200);
  assertEquals(r.body.profile, "temporary");
  const controllers = r.body.controllers as Record<string, unknown>[];
  assertEquals(controllers.length, 1);
  const [one] = controllers;
  assertEquals([one!.alive, one!.self, one!.version], [true, true, VERSION]);
  assertEquals(Object.keys(one!).sort(), [
    "alive",
    "id",
    "last_seen_at",
    "management_address",
    "name",
    "self",
    "started_at",
    "tasks",
    "version",
  ]);
  const anonymous = await callJson(server, "GET", "/api/system/controllers");
  assertEquals([anonymous.status, errorCode(anonymous)], [401, "UNAUTHORIZED"]);
});
