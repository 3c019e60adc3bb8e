import { assertEquals, assertRejects, ok as assert } from "../_helpers/assert.ts";
import { connReader, readsDirectly } from "../../net/conn_read.ts";
import { testCertificate } from "../_helpers/certificates.ts";

const MODULE = new URL("../../net/conn_read.ts", import.meta.url).href;

async function pair(): Promise<{ client: Deno.Conn; server: Deno.Conn; close: () => void }> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const client = await Deno.connect({
    hostname: "127.0.0.1",
    port: (listener.addr as Deno.NetAddr).port,
  });
  const server = await listener.accept();
  listener.close();
  return {
    client,
    server,
    close() {
      for (const c of [client, server]) {
        try {
          c.close();
        } catch { /* closed by the test */ }
      }
    },
  };
}

Deno.test("a Deno TCP connection is read directly, with conn.read's results: bytes, 0 for an empty buffer, null at the end", async () => {
  const { client, server, close } = await pair();
  try {
    assertEquals(readsDirectly(server), true);
    const read = connReader(server);
    await client.write(new TextEncoder().encode("hello"));
    const buf = new Uint8Array(16);
    let got = "";
    while (got.length < 5) {
      const n = await read(buf);
      assert(n !== null && n > 0);
      got += new TextDecoder().decode(buf.subarray(0, n));
    }
    assertEquals(got, "hello");
    assertEquals(await read(new Uint8Array(0)), 0);
    client.closeWrite();
    assertEquals(await read(buf), null);
  } finally {
    close();
  }
});

Deno.test("a TLS connection (an https:// upstream's) is read directly too, decrypted", async () => {
  const { ca, leaf } = await testCertificate("localhost");
  const listener = Deno.listenTls({ hostname: "127.0.0.1", port: 0, ...leaf });
  const accepted = listener.accept();
  const client = await Deno.connectTls({
    hostname: "localhost",
    port: (listener.addr as Deno.NetAddr).port,
    caCerts: [ca.cert],
  });
  const server = await accepted;
  listener.close();
  try {
    assertEquals(readsDirectly(client), true);
    const read = connReader(client);
    const writing = server.write(new TextEncoder().encode("over tls"));
    const buf = new Uint8Array(64);
    let got = "";
    while (got.length < 8) {
      const n = await read(buf);
      assert(n !== null);
      got += new TextDecoder().decode(buf.subarray(0, n));
    }
    await writing;
    assertEquals(got, "over tls");
    server.close();
    assertEquals(await read(buf).catch(() => null), null);
  } finally {
    for (const c of [client, server]) {
      try {
        c.close();
      } catch { /* closed */ }
    }
  }
});

Deno.test("a read pending when the connection is closed rejects, as conn.read's does", async () => {
  const { server, close } = await pair();
  try {
    const read = connReader(server);
    const pending = read(new Uint8Array(16));
    server.close();
    await assertRejects(() => pending);
  } finally {
    close();
  }
});

Deno.test("a connection without Deno's resource id (a wrapper) is read with its own read", async () => {
  const calls: number[] = [];
  const wrapper = {
    read(buf: Uint8Array) {
      calls.push(buf.length);
      return Promise.resolve(null);
    },
  } as unknown as Deno.Conn;
  assertEquals(readsDirectly(wrapper), false);
  assertEquals(await connReader(wrapper)(new Uint8Array(7)), null);
  assertEquals(calls, [7]);
});

Deno.test("reads on a connection that lives in the old generation leave no garbage there", async () => {
  // In a child with --expose-gc: the old space's growth per read over 20,000 one-byte reads
  // once both connections have been promoted (Deno's conn.read left ~120 bytes a read).
  const code = `
    import { connReader } from "${MODULE}";
    import v8 from "node:v8";
    const old = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === "old_space").space_used_size;
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const a = await Deno.connect({ hostname: "127.0.0.1", port: l.addr.port });
    const b = await l.accept();
    const read = connReader(b);
    const one = new Uint8Array([1]);
    const buf = new Uint8Array(16);
    for (let i = 0; i < 2000; i++) { await a.write(one); await read(buf); }
    globalThis.gc();
    globalThis.gc();
    const before = old();
    for (let i = 0; i < 20000; i++) { await a.write(one); await read(buf); }
    console.log((old() - before) / 20000);
    a.close(); b.close(); l.close();
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--v8-flags=--expose-gc", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const writer = out.stdin.getWriter();
  await writer.write(new TextEncoder().encode(code));
  await writer.close();
  const { stdout, success } = await out.output();
  assert(success);
  const perRead = Number(new TextDecoder().decode(stdout).trim());
  assert(perRead < 8, `${perRead} bytes of old-generation garbage a read`);
});
