import assert from "node:assert/strict";
import { openRedirect } from "../../engine/open_redirect.ts";
import { classifyHost, parseIpv4 } from "../../engine/host_address.ts";
import { engineInput } from "../_helpers/engine_input.ts";

Deno.test("parseIpv4() reads every inet_aton spelling of loopback", () => {
  for (const h of ["127.0.0.1", "127.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.0.0.1"]) {
    assert.equal(parseIpv4(h)?.value, 0x7f000001, h);
  }
  assert.equal(parseIpv4("127.0.0.1")?.obfuscated, false);
  assert.equal(parseIpv4("0177.0.0.1")?.obfuscated, true);
});

Deno.test("classifyHost() knows metadata, loopback and mapped IPv6 hosts", () => {
  assert.equal(classifyHost("169.254.169.254").kind, "metadata");
  assert.equal(classifyHost("metadata.google.internal").kind, "metadata");
  assert.equal(classifyHost("[::1]").kind, "loopback");
  assert.equal(classifyHost("[::ffff:127.0.0.1]").kind, "loopback");
  assert.equal(classifyHost("[0:0:0:0:0:ffff:7f00:1]").kind, "loopback");
  assert.equal(classifyHost("example.com").kind, "name");
});

Deno.test("openRedirect() catches same-site-check bypass shapes", () => {
  for (
    const p of [
      "//evil.com",
      "/\\evil.com",
      "https:evil.com",
      "/%09/evil.com".replace("%09", "\t"),
      "https://trusted.com@evil.com",
    ]
  ) {
    const f = openRedirect(engineInput(p, { name: "next" }));
    assert.ok((f?.score ?? 0) >= 40, p);
  }
  assert.ok((openRedirect(engineInput("/\\/evil.com/", { name: "q" }))?.score ?? 0) >= 70);
});

Deno.test("openRedirect() passes ordinary links and nested HTTPS redirect URIs", () => {
  assert.equal(openRedirect(engineInput("/account/settings", { name: "next" })), undefined);
  assert.equal(
    openRedirect(engineInput("?redirect_uri=https://app.example.com/home", { name: "dl" })),
    undefined,
  );
  assert.ok(
    (openRedirect(engineInput("https://example.com/x", { name: "next" }))?.score ?? 0) < 40,
  );
});

Deno.test("openRedirect() catches URLs that browsers repair differently than filters read", () => {
  for (
    const p of [
      "https:///evil.com",
      "https://\\evil.com",
      "https://\t/evil.com",
      "//\t/evil.com",
      "//\\evil.com",
      "http://evil.com\\trusted.example",
      "http://evil.com:80#@trusted.example/",
      "https://:@evil.com\\@trusted.example",
      "//evil\u3002com",
      "/https://\t/evil.com",
      "//evil.com/%2f..".replace("%2f", "/"),
    ]
  ) {
    assert.ok((openRedirect(engineInput(p, { name: "q" }))?.score ?? 0) >= 70, p);
  }
  const encoded = engineInput("http://google.com", { raw: "http://%67%6f%6f%67%6c%65.com" });
  assert.ok((openRedirect(encoded)?.score ?? 0) >= 70);
});

Deno.test("openRedirect() passes ordinary URLs outside redirect parameters", () => {
  for (
    const p of [
      "//cdn.example.com/app.js",
      "https://example.com/a/../b",
      "https://example.com/?ref=www.other.example",
      "https://example.com/path#section",
      "https://例子.测试/路径",
    ]
  ) {
    assert.ok((openRedirect(engineInput(p, { name: "q" }))?.score ?? 0) < 70, p);
  }
  const chinese = engineInput("https://example.com/搜索", {
    raw: "https://example.com/%E6%90%9C%E7%B4%A2",
  });
  assert.ok((openRedirect(chinese)?.score ?? 0) < 70);
});
