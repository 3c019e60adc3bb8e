/** A renewal interrupted before its key and certificate were both in place is finished at load. */
import { assertEquals } from "../../_helpers/assert.ts";
import { tempDir } from "../../_helpers/temp.ts";
import { loadNodeIdentity } from "../../../mod/cluster/node_identity.ts";

async function identityDir(root: string): Promise<string> {
  const dir = `${root}/cluster`;
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/node.json`,
    JSON.stringify({ node_id: "0123456789abcdef", name: "n", controller_url: "https://c:9444" }),
  );
  await Deno.writeTextFile(`${dir}/ca.crt`, "CA");
  await Deno.writeTextFile(`${dir}/node.key`, "old key");
  await Deno.writeTextFile(`${dir}/node.crt`, "old cert");
  return dir;
}

Deno.test("an interrupted renewal is finished when the identity is loaded", async () => {
  for (const keyMoved of [false, true]) {
    await using root = await tempDir();
    const dir = await identityDir(`${root}`);
    await Deno.writeTextFile(keyMoved ? `${dir}/node.key` : `${dir}/node.key.next`, "new key");
    await Deno.writeTextFile(`${dir}/node.crt.next`, "new cert");
    const id = (await loadNodeIdentity(`${root}`))!;
    assertEquals([id.key, id.cert], ["new key", "new cert"], `key moved: ${keyMoved}`);
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name).sort(), [
      "ca.crt",
      "node.crt",
      "node.json",
      "node.key",
    ]);
  }
  // Only the key was written (no certificate yet): the old pair stays in use.
  await using root = await tempDir();
  const dir = await identityDir(`${root}`);
  await Deno.writeTextFile(`${dir}/node.key.next`, "new key");
  const id = (await loadNodeIdentity(`${root}`))!;
  assertEquals([id.key, id.cert], ["old key", "old cert"]);
});
