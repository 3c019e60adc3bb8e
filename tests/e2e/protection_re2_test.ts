/**
 * RE2's fixed WebAssembly heap under churn and large bodies (issue #22, item 2): replaced
 * policies free their expressions, and a body larger than the heap is inspected in slices.
 */
import { assertEquals } from "../_helpers/assert.ts";
import { addSite, apiFor, hit, steps } from "../_helpers/protection.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const MIB = 1024 * 1024;

Deno.test("creating and deleting 2,000 distinct custom rules leaves room: a fresh rule still blocks", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  const api = apiFor(s);
  for (let i = 0; i < 2_000; i++) {
    // Distinct, and large enough to matter: each compiles to several kilobytes of RE2 program.
    const pattern = `^/churn-${i}/(alpha|beta|gamma)[a-z]{1,40}(\\d{2,8})?-${"x".repeat(60)}`;
    const created = await api("POST", "/api/rules/custom", {
      name: `churn ${i}`,
      target: { kind: "path" },
      pattern,
      action: "block",
    });
    assertEquals(created.status, 201, `rule ${i}: ${await created.clone().text()}`);
    const { id } = await created.json();
    assertEquals((await api("DELETE", `/api/rules/custom/${id}`)).status, 204, `delete ${i}`);
  }
  const fresh = await api("POST", "/api/rules/custom", {
    name: "fresh",
    target: { kind: "body" },
    pattern: "fresh-attack-[0-9]+",
    action: "block",
  });
  assertEquals(fresh.status, 201, await fresh.clone().text());
  const { id } = await fresh.json();
  const blocked = await hit(s, "/submit", {
    init: { method: "POST", body: `${"a".repeat(20_000)} fresh-attack-42` },
  });
  assertEquals([blocked.status, steps(blocked).at(-1)], [403, `custom_rule:block:${id}`]);
  const passed = await hit(s, "/submit", { init: { method: "POST", body: "a".repeat(20_000) } });
  assertEquals(passed.status, 200);
});

Deno.test("a body larger than RE2's heap on a site with a body rule is inspected, not answered 500", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url, { max_body_bytes: 64 * MIB, inspect_body_bytes: 16 * MIB });
  const api = apiFor(s);
  const rule = await (await api("POST", "/api/rules/custom", {
    name: "marker at the end",
    target: { kind: "body" },
    pattern: "evil-(marker|token)$",
    action: "block",
  })).json();
  const filler = "b".repeat(15 * MIB);
  const blocked = await hit(s, "/upload", {
    init: { method: "POST", body: `${filler}evil-marker` },
  });
  assertEquals([blocked.status, steps(blocked).at(-1)], [403, `custom_rule:block:${rule.id}`]);
  const clean = await hit(s, "/upload", {
    init: { method: "POST", body: `${filler}evil-marker.` },
  });
  assertEquals(clean.status, 200, "`$` matches only at the body's end, not at a slice's");
  const beyond = await hit(s, "/upload", {
    init: { method: "POST", body: `${"c".repeat(20 * MIB)}evil-marker` },
  });
  assertEquals(beyond.status, 200, "the marker lies past inspect_body_bytes");
});
