/**
 * `/api/sites/{id}/certificate/acme` on the composed app, without an ACME server (the full cycle
 * against pebble is tests/e2e/acme_test.ts): permissions, the state of a site that never used
 * ACME, hosts HTTP-01 cannot validate, and a directory that cannot be reached (named with the
 * network's error at once, the site's state failed, audited and notified).
 */
import { assertEquals, assertMatch } from "../../_helpers/assert.ts";
import { adminAndViewer, auditItems, errorCode } from "../../_helpers/api_access.ts";
import { type ApiTarget, callJson, type Session } from "../../_helpers/identity.ts";

async function site(server: ApiTarget, admin: Session, hosts: string[]): Promise<string> {
  const r = await callJson(server, "POST", "/api/sites", {
    session: admin,
    body: { name: hosts[0]!.replace("*.", "w-"), hosts, upstreams: ["http://127.0.0.1:3000"] },
  });
  return String((r.body.item as { id: string } | undefined)?.id ?? r.body.id);
}

Deno.test("ACME routes: permissions, no state yet, unsupported hosts, an unreachable directory", async () => {
  const { server, admin, viewer } = await adminAndViewer({}, ["ops"]);
  await using _ = server;
  const id = await site(server, admin, ["blog.example"]);
  const path = `/api/sites/${id}/certificate/acme`;
  assertEquals((await callJson(server, "GET", path, { session: viewer })).body, { acme: null });
  const denied = await callJson(server, "POST", path, { session: viewer, body: {} });
  assertEquals([denied.status, errorCode(denied)], [403, "FORBIDDEN"]);
  const missing = await callJson(server, "GET", "/api/sites/nope/certificate/acme", {
    session: viewer,
  });
  assertEquals([missing.status, errorCode(missing)], [404, "NOT_FOUND"]);

  const wild = await site(server, admin, ["*.shop.example"]);
  const w = await callJson(server, "POST", `/api/sites/${wild}/certificate/acme`, {
    session: admin,
    body: {},
  });
  assertEquals([w.status, errorCode(w)], [400, "ACME_UNSUPPORTED_HOST"]);
  const http = await callJson(server, "POST", path, {
    session: admin,
    body: { directory: "http://127.0.0.1:9/dir" },
  });
  assertEquals([http.status, errorCode(http)], [400, "BAD_REQUEST"]);

  const started = Date.now();
  const r = await callJson(server, "POST", path, {
    session: admin,
    body: { directory: "https://127.0.0.1:9/dir", email: "ops@example.com" },
  });
  assertEquals([r.status, errorCode(r)], [502, "ACME_DIRECTORY_UNREACHABLE"]);
  assertMatch(
    (r.body.error as { message: string }).message,
    /https:\/\/127\.0\.0\.1:9\/dir could not be reached: .*ECONNREFUSED/,
  );
  assertEquals(Date.now() - started < 5_000, true, "no retries against a refused port");
  const state = (await callJson(server, "GET", path, { session: admin })).body.acme as {
    status: string;
    directory: string;
    email: string;
    last_error: string;
  };
  assertEquals([state.status, state.directory, state.email], [
    "failed",
    "https://127.0.0.1:9/dir",
    "ops@example.com",
  ]);
  assertMatch(state.last_error, /could not be reached/);
  const inbox = await callJson(server, "GET", "/api/notifications", { session: admin });
  assertEquals(
    (inbox.body.items as { kind: string }[]).filter((n) => n.kind === "acme.failed").length,
    1,
  );
  const audit = await auditItems(server, admin, "action=site.certificate.acme");
  assertEquals(
    audit.map((a) => [a.result, a.detail.code ?? a.detail.trigger]),
    [
      ["failure", "request"],
      ["failure", "BAD_REQUEST"],
      ["failure", "ACME_UNSUPPORTED_HOST"],
      ["failure", "FORBIDDEN"],
    ].filter((x) => x[1] !== "FORBIDDEN"),
  );
});
