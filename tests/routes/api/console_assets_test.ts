/**
 * The console's files as served: every asset with its type and the strict CSP, the shell for
 * client-side routes, the catalogues in step, every text key a page uses present, every
 * permission a page names one that a route declares (so a renamed permission fails here), and
 * every permission placed in an area and described in both languages.
 */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { startTestServer } from "../../_helpers/server.ts";
import { CONSOLE_CSP, consoleAssets } from "../../../routes/api/console.ts";
import en from "../../../console/i18n/en.js";
import zh from "../../../console/i18n/zh-CN.js";
import { PAGES } from "../../../console/pages.js";
import { areaOf, AREAS, groupPermissions, PRESETS } from "../../../console/permissions.js";
import { PERMISSIONS } from "../../../mod/identity/permissions.ts";

const sources = consoleAssets().filter((a) =>
  a.path.endsWith(".js") && !a.path.startsWith("vendor/")
);

Deno.test("every console asset is served with its type and the strict CSP", async () => {
  await using s = await startTestServer();
  ok(!CONSOLE_CSP.includes("unsafe"), CONSOLE_CSP);
  for (const asset of consoleAssets().filter((a) => !a.path.endsWith(".html"))) {
    const r = await fetch(`${s.managementUrl}/console/assets/${asset.path}`);
    assertEquals(r.status, 200, asset.path);
    assertEquals(r.headers.get("content-security-policy"), CONSOLE_CSP, asset.path);
    const type = { js: /javascript/, css: /^text\/css/, svg: /^image\/svg\+xml$/ }[
      asset.path.slice(asset.path.lastIndexOf(".") + 1)
    ];
    ok(type?.test(r.headers.get("content-type") ?? ""), asset.path);
    assertEquals(await r.text(), asset.body, asset.path);
  }
  for (
    const path of ["/console", "/console/sites", "/console/logs/0123456789abcdef0123456789abcdef"]
  ) {
    const r = await fetch(`${s.managementUrl}${path}`);
    assertEquals([r.status, r.headers.get("content-security-policy")], [200, CONSOLE_CSP], path);
    ok((await r.text()).includes('src="/console/assets/app.js"'), path);
  }
  for (const path of ["/console/assets", "/console/Bad_Page", "/console/a/b/c"]) {
    const r = await fetch(`${s.managementUrl}${path}`);
    await r.body?.cancel();
    assertEquals(r.status, 404, path);
  }
});

Deno.test("the two catalogues have the same keys and no empty text", () => {
  assertEquals(Object.keys(zh).sort(), Object.keys(en).sort());
  for (const [k, v] of [...Object.entries(en), ...Object.entries(zh)]) ok(v !== "", k);
});

Deno.test("every text key a console file names is in the English catalogue", () => {
  const missing: string[] = [];
  const keyed = /\bt\("([a-z0-9_.-]+)"|(?:label|hint): "([a-z]+\.[a-z0-9_.-]+)"/g;
  for (const file of sources) {
    for (const m of file.body.matchAll(keyed)) {
      const key = m[1] ?? m[2]!;
      if (!key.endsWith("_") && !key.endsWith(".") && !(key in en)) {
        missing.push(`${file.path}: ${key}`);
      }
    }
  }
  assertEquals(missing, []);
  for (const p of PAGES) ok(`nav.${p.id}` in en, p.id);
});

Deno.test("every permission the console names is one a management route declares", async () => {
  await using s = await startTestServer();
  const declared = new Set(
    s.routes.flatMap((r) => r.access.kind === "permission" ? [r.access.permission] : []),
  );
  const named = new Set<string>();
  for (const p of PAGES) if (p.read !== null) named.add(p.read);
  const perm = /\b(?:can\(|write=|permission=)"([a-z_]+:[a-z_]+)"/g;
  for (const file of sources) for (const m of file.body.matchAll(perm)) named.add(m[1]!);
  ok(named.size > 10, [...named].join(","));
  assertEquals([...named].filter((p) => !declared.has(p)), []);
});

Deno.test("every permission has an area and a one-line description in both catalogues", () => {
  for (const p of PERMISSIONS) {
    ok(areaOf(p) !== "other", `${p} has no area`);
    for (const [name, catalogue] of [["en", en], ["zh-CN", zh]] as const) {
      const text = (catalogue as Record<string, string>)[`perm.${p}`];
      ok(text && text.length <= 100 && !text.includes("\n"), `${name}: perm.${p}`);
    }
  }
  for (const area of [...AREAS.map((a) => a.id), "other"]) ok(`perm.group.${area}` in zh, area);
  assertEquals(groupPermissions(PERMISSIONS).map((g) => g.id), AREAS.map((a) => a.id));
  assertEquals(PRESETS.read(PERMISSIONS), PERMISSIONS.filter((p) => p.startsWith("read:")));
});
