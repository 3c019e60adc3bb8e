/** Administrator notifications over HTTP: list with the unread filter and cursor, mark read. */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import {
  adminAndViewer,
  auditItems,
  errorCode,
  mintToken,
  TOKENS_ON,
  withToken,
} from "../../_helpers/api_access.ts";
import { callJson } from "../../_helpers/identity.ts";
import type { TestApp } from "../../_helpers/server.ts";

const ready = () => adminAndViewer(TOKENS_ON, ["apiAccess"]);

/** Stores `n` notifications one second apart; returns their ids, oldest first. */
function notify(server: TestApp<"apiAccess">, n: number): string[] {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    ids.push(server.apiAccess.notifications.notifyAdmins({
      level: "info",
      kind: "test",
      title: `note ${i}`,
      body: "",
    }));
    server.clock.advance(1000);
  }
  return ids;
}

type Page = { items: { id: string; read: boolean; title: string }[]; next_cursor: string | null };

Deno.test("GET /api/notifications lists newest first and pages with next_cursor", async () => {
  const { server, viewer } = await ready();
  await using _ = server;
  const ids = notify(server, 5);
  const seen: string[] = [];
  let cursor: string | null = "";
  while (cursor !== null) {
    const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
    const r = await callJson(server, "GET", `/api/notifications?limit=2${q}`, { session: viewer });
    assertEquals(r.status, 200);
    const page = r.body as unknown as Page;
    ok(page.items.length <= 2);
    seen.push(...page.items.map((i) => i.id));
    cursor = page.next_cursor;
  }
  assertEquals(seen, [...ids].reverse());
  const bad = await callJson(server, "GET", "/api/notifications?cursor=nope", { session: viewer });
  assertEquals([bad.status, errorCode(bad)], [400, "BAD_REQUEST"]);
  const limit = await callJson(server, "GET", "/api/notifications?limit=0", { session: viewer });
  assertEquals(limit.status, 400);
});

Deno.test("POST /api/notifications/{id}/read marks one read for the caller only; unread=true hides it; audited", async () => {
  const { server, admin, viewer } = await ready();
  await using _ = server;
  const [first, second] = notify(server, 2) as [string, string];
  const r = await callJson(server, "POST", `/api/notifications/${first}/read`, { session: admin });
  assertEquals(r.status, 200);
  const item = r.body.item as { read: boolean; read_at: string };
  assertEquals([item.read, Date.parse(item.read_at)], [true, server.clock.now()]);
  const unread = await callJson(server, "GET", "/api/notifications?unread=true", {
    session: admin,
  });
  assertEquals((unread.body as unknown as Page).items.map((i) => i.id), [second]);
  const all = await callJson(server, "GET", "/api/notifications", { session: admin });
  assertEquals((all.body as unknown as Page).items.map((i) => [i.id, i.read]), [
    [second, false],
    [first, true],
  ]);
  // Read state belongs to each reader: the viewer (read:monitor) still sees both unread, and
  // marking one read changes nothing for the administrator.
  const viewerUnread = await callJson(server, "GET", "/api/notifications?unread=true", {
    session: viewer,
  });
  assertEquals((viewerUnread.body as unknown as Page).items.map((i) => i.id), [second, first]);
  const byViewer = await callJson(server, "POST", `/api/notifications/${second}/read`, {
    session: viewer,
  });
  assertEquals(byViewer.status, 200, "read:monitor marks its own inbox");
  const adminStill = await callJson(server, "GET", "/api/notifications?unread=true", {
    session: admin,
  });
  assertEquals((adminStill.body as unknown as Page).items.map((i) => i.id), [second]);
  const missing = await callJson(server, "POST", "/api/notifications/nope/read", {
    session: admin,
  });
  assertEquals(missing.status, 404);
  const audit = await auditItems(server, admin, "action=notification.read");
  assertEquals(
    audit.map((i) => [i.result, i.target]),
    [
      ["failure", "notification:nope"],
      ["success", `notification:${second}`],
      ["success", `notification:${first}`],
    ],
  );
});

Deno.test("notification routes need read:monitor (the specification's identifier for notification channels)", async () => {
  const { server, admin } = await ready();
  await using _ = server;
  const [id] = notify(server, 1) as [string];
  const other = await mintToken(server, admin, { note: "o", permissions: ["read:logs"] });
  assertEquals((await withToken(server, other.token, "GET", "/api/notifications")).status, 403);
  const refused = await withToken(server, other.token, "POST", `/api/notifications/${id}/read`);
  assertEquals(refused.status, 403);
  const reader = await mintToken(server, admin, { note: "r", permissions: ["read:monitor"] });
  assertEquals((await withToken(server, reader.token, "GET", "/api/notifications")).status, 200);
  const marked = await withToken(server, reader.token, "POST", `/api/notifications/${id}/read`);
  assertEquals(marked.status, 200, "no CSRF header needed with a token");
  const invented = await callJson(server, "POST", "/api/system/api-tokens", {
    session: admin,
    body: { note: "x", permissions: ["read:notifications"] },
  });
  assertEquals(invented.status, 400, "an identifier outside the specification is refused");
});
