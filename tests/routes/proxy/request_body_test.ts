/**
 * `planBody` and `mayHaveBody` on requests that record whether their `body` stream was asked
 * for: a small declared body is taken whole through `bytes()` (the own HTTP/1.1 server then
 * hands over what it holds, no stream), while a longer or chunked one still streams and a body
 * over the limit is refused without being read.
 */
import { assertEquals, ok as assert } from "../../_helpers/assert.ts";
import { mayHaveBody, planBody } from "../../../routes/proxy/request_body.ts";

/** A `Request` stand-in that counts what the data plane asks of it. */
class Probe {
  readonly headers: Headers;
  streamAsked = 0;
  bytesRead = 0;
  readonly #chunks: Uint8Array[] | null;

  constructor(headers: Record<string, string>, chunks: Uint8Array[] | null) {
    this.headers = new Headers(headers);
    this.#chunks = chunks;
  }

  get body(): ReadableStream<Uint8Array> | null {
    this.streamAsked++;
    if (this.#chunks === null) return null;
    const chunks = [...this.#chunks];
    return new ReadableStream({
      pull(c) {
        const next = chunks.shift();
        if (next === undefined) c.close();
        else c.enqueue(next);
      },
    });
  }

  bytes(): Promise<Uint8Array> {
    this.bytesRead++;
    if (this.#chunks === null) return Promise.resolve(new Uint8Array(0));
    const total = this.#chunks.reduce((n, c) => n + c.length, 0);
    const out = new Uint8Array(total);
    let at = 0;
    for (const c of this.#chunks) {
      out.set(c, at);
      at += c.length;
    }
    return Promise.resolve(out);
  }

  get request(): Request {
    return this as unknown as Request;
  }
}

const bytes = (text: string) => new TextEncoder().encode(text);

Deno.test("a small declared body is read whole, without asking for its stream", async () => {
  const req = new Probe({ "content-length": "11" }, [bytes("hello "), bytes("world")]);
  assert(mayHaveBody(req.request));
  const plan = await planBody(req.request, 1000, 100);
  assertEquals(plan.kind, "buffered");
  if (plan.kind === "buffered") assertEquals(new TextDecoder().decode(plan.bytes), "hello world");
  assertEquals(req.streamAsked, 0);
  assertEquals(req.bytesRead, 1);
});

Deno.test("a declared length of 0, or a body the server dropped, is no body", async () => {
  const zero = new Probe({ "content-length": "0" }, [bytes("x")]);
  assert(!mayHaveBody(zero.request));
  assertEquals((await planBody(zero.request, 1000, 100)).kind, "none");
  assertEquals(zero.streamAsked, 0);
  // A GET whose body the server reads and drops: a declared length but no body.
  const dropped = new Probe({ "content-length": "5" }, null);
  assertEquals((await planBody(dropped.request, 1000, 100)).kind, "none");
  const none = new Probe({}, null);
  assert(!mayHaveBody(none.request));
  assertEquals((await planBody(none.request, 1000, 100)).kind, "none");
});

Deno.test("a declared length over the limit is refused before any read", async () => {
  const req = new Probe({ "content-length": "5000" }, [bytes("x".repeat(5000))]);
  assertEquals((await planBody(req.request, 1000, 100)).kind, "too_large");
  assertEquals(req.bytesRead, 0);
  // A body the server dropped has nothing to refuse.
  const dropped = new Probe({ "content-length": "5000" }, null);
  assertEquals((await planBody(dropped.request, 1000, 100)).kind, "none");
});

Deno.test("a body longer than the inspected prefix streams on, the prefix replayed", async () => {
  const req = new Probe({ "content-length": "300" }, [
    bytes("a".repeat(150)),
    bytes("b".repeat(150)),
  ]);
  const plan = await planBody(req.request, 1000, 100);
  assertEquals(plan.kind, "streaming");
  assertEquals(req.bytesRead, 0);
  if (plan.kind !== "streaming") return;
  assertEquals(plan.prefix.length, 150);
  const all = new Uint8Array(await new Response(plan.body).arrayBuffer());
  assertEquals(new TextDecoder().decode(all), "a".repeat(150) + "b".repeat(150));
});

Deno.test("a chunked body is counted as it streams and stops past the limit", async () => {
  const req = new Probe({}, [bytes("a".repeat(80)), bytes("b".repeat(80)), bytes("c".repeat(80))]);
  assert(mayHaveBody(req.request));
  const plan = await planBody(req.request, 200, 50);
  assertEquals(plan.kind, "streaming");
  if (plan.kind !== "streaming") return;
  const failed = await new Response(plan.body).arrayBuffer().then(() => false, () => true);
  assert(failed);
  assert(plan.progress.exceeded);
});
