import { assertEquals, ok } from "../../_helpers/assert.ts";
import type { PolicyObjectRow } from "../../../db/policy_objects_repo.ts";
import { createApisecWire } from "../../../mod/apisec/apisec_wire.ts";
import { APISEC_KIND, SECRET_OWNER } from "../../../mod/apisec/apisec_settings.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { createSecretBox, createSyncSecretBox } from "../../../mod/core/secret_box.ts";

const SECRET = "a-shared-secret-of-32-characters!";

async function machine() {
  const dir = await Deno.makeTempDir({ prefix: "waf-apisec-wire-" });
  const unreadable: unknown[] = [];
  const path = `${dir}/totp.key`;
  const wire = createApisecWire({
    box: createSyncSecretBox(path, systemRandom),
    unreadable: (err) => unreadable.push(err),
  });
  return { dir, wire, unreadable, box: createSecretBox(path, systemRandom) };
}

const row = (config: unknown, kind = APISEC_KIND): PolicyObjectRow => ({
  id: kind,
  kind,
  site_id: null,
  position: 0,
  config: JSON.stringify(config),
  created_at: 1,
  updated_at: 1,
});
const secretOf = (r: PolicyObjectRow) =>
  (JSON.parse(r.config) as { auth: { secret_sealed: string | null } }).auth.secret_sealed;

Deno.test("the secret travels opened and is sealed under the receiving directory's key", async () => {
  const ctl = await machine();
  const node = await machine();
  try {
    const sealed = await ctl.box.seal(new TextEncoder().encode(SECRET), SECRET_OWNER);
    const stored = row({ auth: { enabled: true, secret_sealed: sealed }, rate_limits: [] });
    const wire = ctl.wire.open(stored);
    ok(secretOf(wire)!.startsWith("opened."));
    ok(!wire.config.includes(SECRET), "base64url, not the text itself");
    // The same opened form every time (the policy version hashes it).
    assertEquals(ctl.wire.open(stored), wire);
    assertEquals(ctl.wire.open(wire), wire);

    const onNode = node.wire.seal(wire);
    const resealed = secretOf(onNode)!;
    ok(resealed.startsWith("v1.") && resealed !== sealed);
    assertEquals(
      new TextDecoder().decode(await node.box.open(resealed, SECRET_OWNER)),
      SECRET,
    );
    // The rest of the document is untouched; the node's form opens to the same wire form.
    assertEquals(JSON.parse(onNode.config).rate_limits, []);
    assertEquals(node.wire.open(onNode), wire);
    // The controller's sealed value does not open on the node: it gets none, told once.
    assertEquals(secretOf(node.wire.open(stored)), null);
    node.wire.open(stored);
    assertEquals(node.unreadable.length, 1);
  } finally {
    await Deno.remove(ctl.dir, { recursive: true });
    await Deno.remove(node.dir, { recursive: true });
  }
});

Deno.test("rows without a secret, other kinds and a sealed value from an older controller pass unchanged", async () => {
  const m = await machine();
  try {
    const none = row({ auth: { secret_sealed: null } });
    const other = row({ auth: { secret_sealed: "opened.YWJj" } }, "edge_settings");
    const older = row({ auth: { secret_sealed: "v1.aaaa.bbbb" } });
    for (const r of [none, other, older]) assertEquals(m.wire.seal(r), r);
    assertEquals(m.wire.open(none), none);
    assertEquals(m.wire.open(other), other);
    assertEquals(secretOf(m.wire.seal(row({ auth: { secret_sealed: "opened.!!" } }))), null);
  } finally {
    await Deno.remove(m.dir, { recursive: true });
  }
});
