/**
 * Mismatches the specification audit found (docs/spec_audit.md), each pinned against a real
 * server on port 0 with a signed-in administrator (session cookie and CSRF header).
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { ADMIN, callJson, completeSetup, login } from "../../_helpers/identity.ts";
import { startTestServer } from "../../_helpers/server.ts";

Deno.test("PUT /api/block-pages/settings takes back what GET answers, and sanitises custom_html (2.6, 4.5)", async () => {
  await using s = await startTestServer();
  await completeSetup(s);
  const session = await login(s, ADMIN.username, ADMIN.password);
  const settings = await callJson(s, "GET", "/api/block-pages/settings", { session });
  assertEquals(settings.body, { template_id: "minimal", custom_enabled: false, custom_html: "" });
  const same = await callJson(s, "PUT", "/api/block-pages/settings", {
    session,
    body: settings.body,
  });
  assertEquals(same.status, 200, JSON.stringify(same.body));
  assertEquals(same.body, settings.body);

  const written = await callJson(s, "PUT", "/api/block-pages/settings", {
    session,
    body: {
      custom_enabled: true,
      custom_html: '<h1 onclick="x()">Stopped</h1><script>alert(1)</script>' +
        '<a href="javascript:alert(1)">y</a><p style="background:url(javascript:1)">{{trace_id}}</p>',
    },
  });
  assertEquals(written.status, 200, JSON.stringify(written.body));
  const html = written.body.custom_html as string;
  ok(html.includes("Stopped") && html.includes("{{trace_id}}"), html);
  ok(!/onclick|script|javascript:/i.test(html), html);
  assertEquals(written.body.custom_enabled, true);
  const read = await callJson(s, "GET", "/api/block-pages/settings", { session });
  assertEquals(read.body, written.body, "the sanitised page is what is kept");

  const big = await callJson(s, "PUT", "/api/block-pages/settings", {
    session,
    body: { custom_html: "<p>" + "x".repeat(70_000) + "</p>" },
  });
  assertEquals(big.status, 413);
  assertEquals((big.body.error as { code: string }).code, "PAYLOAD_TOO_LARGE");
  const cleared = await callJson(s, "PUT", "/api/block-pages/settings", {
    session,
    body: { custom_enabled: true, custom_html: "" },
  });
  assertEquals(cleared.status, 400, "enabled with nothing to show");
  const audit = s.db.prepare(
    "SELECT detail FROM audit_log WHERE action = 'block_page.settings.update' ORDER BY id",
  ).all() as Array<{ detail: string }>;
  ok(!audit.some((r) => r.detail.includes("Stopped")), "the audit keeps a size, not the page");
});

Deno.test("POST /api/block-pages/upload and /preview take the page as html or as custom_html (2.6's key), exactly one", async () => {
  await using s = await startTestServer();
  await completeSetup(s);
  const session = await login(s, ADMIN.username, ADMIN.password);
  const upload = await callJson(s, "POST", "/api/block-pages/upload", {
    session,
    body: { custom_html: "<h1>Stop</h1><script>x()</script>" },
  });
  assertEquals(upload.status, 200, JSON.stringify(upload.body));
  ok(!(upload.body.html as string).includes("script"));
  const kept = await callJson(s, "GET", "/api/block-pages/settings", { session });
  assertEquals(kept.body.custom_enabled, true);
  ok((kept.body.custom_html as string).includes("<h1>Stop</h1>"));
  const preview = await callJson(s, "POST", "/api/block-pages/preview?as=link", {
    session,
    body: { custom_html: "<p>Preview</p>" },
  });
  assertEquals(preview.status, 201);
  for (const body of [{}, { html: "<p>a</p>", custom_html: "<p>b</p>" }]) {
    const r = await callJson(s, "POST", "/api/block-pages/upload", { session, body });
    assertEquals(r.status, 400, JSON.stringify(body));
    assertEquals((r.body.error as { code: string }).code, "BAD_REQUEST");
  }
});
