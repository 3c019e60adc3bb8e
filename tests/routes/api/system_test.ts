/** System endpoints over HTTP: version, the unimplemented backup API, and the reserved OTA keys. */
import { assertEquals, assertMatch } from "../../_helpers/assert.ts";
import { adminAndViewer, auditItems, errorCode } from "../../_helpers/api_access.ts";
import { callJson } from "../../_helpers/identity.ts";
import { SCHEMA_VERSION } from "../../../db/migrations.ts";
import { VERSION } from "../../../mod/core/version.ts";

const ready = (config: Record<string, unknown> = {}) =>
  adminAndViewer(config, ["apiAccess", "dataPlane"]);

Deno.test("GET /api/system/version reports product, schema, runtime and build", async () => {
  const { server, viewer } = await ready();
  await using _ = server;
  const r = await callJson(server, "GET", "/api/system/version", { session: viewer });
  assertEquals(r.status, 200);
  assertEquals(r.body.version, VERSION);
  assertEquals(r.body.schema_version, SCHEMA_VERSION);
  assertEquals((r.body.runtime as { deno: string }).deno, Deno.version.deno);
  assertEquals((r.body.build as { os: string }).os, Deno.build.os);
  // A source checkout: the executables report "deno compile" or "self-contained" and their hash.
  const build = r.body.build as { kind: string; content_hash: string };
  assertEquals([build.kind, build.content_hash], ["source", "source"]);
});

Deno.test("GET /api/system/data-plane: one worker is the main thread; it needs read:system", async () => {
  const { server, viewer } = await ready();
  await using _ = server;
  const r = await callJson(server, "GET", "/api/system/data-plane", { session: viewer });
  assertEquals(r.status, 200);
  assertEquals(
    [r.body.setting, r.body.workers, r.body.current, r.body.threads],
    [1, 1, true, []],
  );
  assertEquals(r.body.cores, navigator.hardwareConcurrency);
  assertEquals(typeof r.body.policy_version, "number");
  const anonymous = await callJson(server, "GET", "/api/system/data-plane");
  assertEquals([anonymous.status, errorCode(anonymous)], [401, "UNAUTHORIZED"]);
});

Deno.test("POST /api/backup/export and /restore always answer 501 with their codes, audited", async () => {
  const { server, admin, viewer } = await ready();
  await using _ = server;
  const exp = await callJson(server, "POST", "/api/backup/export", { session: admin });
  assertEquals([exp.status, errorCode(exp)], [501, "BACKUP_EXPORT_NOT_IMPLEMENTED"]);
  assertMatch((exp.body.error as { message: string }).message, /waf store backup/);
  const res = await callJson(server, "POST", "/api/backup/restore", { session: admin });
  assertEquals([res.status, errorCode(res)], [501, "BACKUP_RESTORE_NOT_IMPLEMENTED"]);
  const denied = await callJson(server, "POST", "/api/backup/export", { session: viewer });
  assertEquals([denied.status, errorCode(denied)], [403, "FORBIDDEN"]);
  const audit = await auditItems(server, admin, "action=backup.export");
  assertEquals(
    audit.map((i) => i.detail.code),
    ["BACKUP_EXPORT_NOT_IMPLEMENTED"],
  );
});

Deno.test("GET /api/system/ota reports the update.ota keys as reserved and OTA as unavailable", async () => {
  const { server, viewer } = await ready({ update: { ota: { channel: "beta" } } });
  await using _ = server;
  const r = await callJson(server, "GET", "/api/system/ota", { session: viewer });
  assertEquals(r.status, 200);
  assertEquals(r.body.available, false);
  assertEquals((r.body.settings as { enabled: boolean; channel: string }).enabled, false);
  assertEquals((r.body.settings as { channel: string }).channel, "beta");
  assertEquals(r.body.reserved_keys, [
    "server",
    "channel",
    "check_interval",
    "auto_update_rules",
    "auto_update_binary",
    "verify_signature",
  ]);
});

Deno.test("PUT /api/system/ota refuses enabling (501) and reserved keys (409) and changes nothing", async () => {
  const { server, admin, viewer } = await ready();
  await using _ = server;
  const before = await callJson(server, "GET", "/api/system/ota", { session: admin });
  const on = await callJson(server, "PUT", "/api/system/ota", {
    session: admin,
    body: { enabled: true },
  });
  assertEquals([on.status, errorCode(on)], [501, "OTA_UPDATES_UNAVAILABLE"]);
  const reserved = await callJson(server, "PUT", "/api/system/ota", {
    session: admin,
    body: { channel: "beta", auto_update_binary: true },
  });
  assertEquals([reserved.status, errorCode(reserved)], [409, "OTA_SETTING_RESERVED"]);
  assertEquals(
    reserved.body.error && (reserved.body.error as { reserved_keys: string[] }).reserved_keys,
    [
      "channel",
      "auto_update_binary",
    ],
  );
  const same = await callJson(server, "PUT", "/api/system/ota", {
    session: admin,
    body: { enabled: false, channel: "stable" },
  });
  assertEquals(same.status, 200);
  const bad = await callJson(server, "PUT", "/api/system/ota", {
    session: admin,
    body: { public_keys: ["x"] },
  });
  assertEquals([bad.status, (bad.body.error as { field: string }).field], [400, "public_keys"]);
  const denied = await callJson(server, "PUT", "/api/system/ota", {
    session: viewer,
    body: { enabled: false },
  });
  assertEquals(denied.status, 403);
  // The document GET answers, written back: unchanged is fine, enabled is the same refusal.
  const back = await callJson(server, "PUT", "/api/system/ota", {
    session: admin,
    body: before.body,
  });
  assertEquals(back.status, 200, JSON.stringify(back.body));
  const settings = before.body.settings as Record<string, unknown>;
  const onAsRead = await callJson(server, "PUT", "/api/system/ota", {
    session: admin,
    body: { ...before.body, settings: { ...settings, enabled: true } },
  });
  assertEquals([onAsRead.status, errorCode(onAsRead)], [501, "OTA_UPDATES_UNAVAILABLE"]);
  const after = await callJson(server, "GET", "/api/system/ota", { session: admin });
  assertEquals(after.body, before.body);
  const audit = await auditItems(server, admin, "action=system.ota.update");
  assertEquals(
    audit.map((i) => `${i.result} ${i.detail.code ?? ""}`),
    [
      "failure OTA_UPDATES_UNAVAILABLE",
      "success ",
      "success ",
      "failure OTA_SETTING_RESERVED",
      "failure OTA_UPDATES_UNAVAILABLE",
    ],
  );
});
