/** Block pages: templates, preview, sanitised upload, size limit, and what blocked visitors see. */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { addSite, apiFor, hit } from "../_helpers/protection.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const ATTACK = "/search?q=1%20union%20select%20password%20from%20users";

Deno.test("the built-in templates are listed with a preview, and choosing one changes the live block page", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const list = await api("GET", "/api/block-pages/templates", undefined, "read:system");
  assertEquals(list.status, 200);
  const items = (await list.json()).items as Array<{ id: string; name: string; preview: string }>;
  assertEquals(items.map((t) => t.id), ["minimal", "friendly"]);
  ok(items[0]!.preview.includes("0123456789abcdef0123456789abcdef"));
  assertEquals(await (await api("GET", "/api/block-pages/settings")).json(), {
    template_id: "minimal",
    custom_enabled: false,
    custom_html: "",
  });
  assertEquals(
    (await api("PUT", "/api/block-pages/settings", { template_id: "nope" }, "write:system")).status,
    400,
  );
  assertEquals(
    (await api("PUT", "/api/block-pages/settings", { template_id: "friendly" }, "read:system"))
      .status,
    403,
  );
  assertEquals(
    (await api("PUT", "/api/block-pages/settings", { template_id: "friendly" }, "write:system"))
      .status,
    200,
  );
  const blocked = await hit(s, ATTACK);
  assertEquals(blocked.status, 403);
  ok(blocked.body.includes("Sorry, this request was stopped"));
  ok(blocked.body.includes(blocked.traceId));
});

Deno.test("an uploaded custom page is sanitised, served to blocked visitors with their trace id, and removable", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  const html =
    `<html><head><meta http-equiv="refresh" content="0;url=https://evil.test"><title>Stop</title></head>
<body><h1 onclick="steal()">Custom stop</h1><script>alert(1)</script><a href="javascript:alert(1)">x</a>
<p>Reference {{ trace_id }}</p></body></html>`;
  const up1 = await api("POST", "/api/block-pages/upload", { html }, "write:system");
  assertEquals(up1.status, 200);
  const result = await up1.json();
  assertEquals(result.removed, ["meta[http-equiv]", "h1@onclick", "script", "a@href"]);

  const blocked = await hit(s, ATTACK);
  assertEquals(blocked.status, 403);
  ok(blocked.body.includes("Custom stop"));
  ok(blocked.body.includes(`Reference ${blocked.traceId}`));
  ok(!/script|onclick|javascript:|http-equiv/i.test(blocked.body), blocked.body);
  ok((blocked.headers.get("content-security-policy") ?? "").includes("default-src 'none'"));
  const json = await hit(s, ATTACK, { init: { headers: { accept: "application/json" } } });
  assertEquals(JSON.parse(json.body).traceId, json.traceId, "API clients still get JSON");

  await api("POST", "/api/block-pages/upload", { html: "<h2>No placeholder here</h2>" });
  const inserted = await hit(s, ATTACK);
  ok(
    inserted.body.includes(`traceId: <code>${inserted.traceId}</code>`),
    "the trace id is inserted",
  );

  assertEquals(
    (await api("DELETE", "/api/block-pages/custom", undefined, "write:system")).status,
    204,
  );
  const back = await hit(s, ATTACK);
  ok(back.body.includes("Request blocked"), "back to the minimal template");
  const audit = s.db.prepare(
    "SELECT action FROM audit_log WHERE action LIKE 'block_page.%' ORDER BY id",
  ).all();
  assertEquals(audit.map((r) => r.action), [
    "block_page.custom.update",
    "block_page.custom.update",
    "block_page.custom.delete",
  ]);
});

Deno.test("an oversized upload is refused with 413 and the error object; preview is sandboxed", async () => {
  await using s = await startTestServer();
  const api = apiFor(s);
  const big = await api("POST", "/api/block-pages/upload", {
    html: "<p>" + "x".repeat(70_000) + "</p>",
  });
  assertEquals(big.status, 413);
  const err = (await big.json()).error;
  assertEquals(err.code, "PAYLOAD_TOO_LARGE");
  ok(err.trace_id && err.event_id);
  assertEquals(
    (await (await api("GET", "/api/block-pages/settings")).json()).custom_enabled,
    false,
  );

  const preview = await api("POST", "/api/block-pages/preview", {
    html: "<p onclick=x>Hi {{trace_id}}</p><script>1</script>",
  }, "read:system");
  assertEquals(preview.status, 200);
  const csp = preview.headers.get("content-security-policy") ?? "";
  ok(csp.includes("sandbox") && csp.includes("default-src 'none'"), csp);
  const body = await preview.text();
  ok(body.includes("Hi 0123456789abcdef0123456789abcdef"));
  ok(!/script|onclick/.test(body));
  assertEquals(
    (await api("PUT", "/api/block-pages/settings", { custom_enabled: true })).status,
    400,
    "nothing uploaded",
  );
});
