/**
 * The management listener's per-client connection cap against consoles behind one address (an
 * office behind NAT): connections carrying an authenticated realtime feed (SSE or WebSocket) stop
 * counting toward the cap, so more feeds than the cap stay open, while connections that carried
 * none (idle, unauthenticated) are still refused past it. Feeds still count toward the total.
 */
import net from "node:net";
import { assertEquals, ok } from "../_helpers/assert.ts";
import { startTestServer } from "../_helpers/server.ts";
import { ADMIN, completeSetup, login } from "../_helpers/identity.ts";

/** A connection from `localAddress` that sends `request` and collects what comes back. */
async function connectFrom(port: number, localAddress: string, request: string) {
  const sock = await new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect({ host: "127.0.0.1", port, localAddress }, () => resolve(s));
    s.once("error", reject);
  });
  let text = "";
  let closed = false;
  const waiters: (() => void)[] = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  sock.on("data", (d) => {
    text += d.toString();
    wake();
  });
  sock.on("close", () => {
    closed = true;
    wake();
  });
  sock.on("error", () => {});
  sock.write(request);
  return {
    sock,
    /** Resolves with the text once it matches `re`, or with null when the server closed first. */
    async until(re: RegExp): Promise<string | null> {
      while (!re.test(text)) {
        if (closed) return null;
        await new Promise<void>((r) => waiters.push(r));
      }
      return text;
    },
  };
}

Deno.test("authenticated realtime feeds from one address do not count toward the management per-client cap; other connections still do", async () => {
  await using s = await startTestServer({
    config: { server: { management: { limits: { max_connections_per_client: 3 } } } },
  });
  await completeSetup(s);
  const admin = await login(s, ADMIN.username, ADMIN.password);
  const port = Number(new URL(s.managementUrl).port);
  const host = `127.0.0.1:${port}`;
  // One office address (127.0.0.3) with more consoles than the cap: five SSE feeds, one WebSocket.
  const feeds = [];
  for (let i = 0; i < 5; i++) {
    const c = await connectFrom(
      port,
      "127.0.0.3",
      `GET /api/realtime/events HTTP/1.1\r\nHost: ${host}\r\nCookie: ${admin.cookie}\r\n\r\n`,
    );
    ok(await c.until(/: connected\n\n/), `feed ${i + 1} answered`);
    feeds.push(c);
  }
  const ws = await connectFrom(
    port,
    "127.0.0.3",
    `GET /api/realtime/ws HTTP/1.1\r\nHost: ${host}\r\nOrigin: http://${host}\r\n` +
      `Cookie: ${admin.cookie}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
  );
  ok(await ws.until(/^HTTP\/1\.1 101/), "the WebSocket feed upgraded");
  feeds.push(ws);

  // The cap still applies to everything else from that address: three plain connections (one
  // asking for a feed without credentials) are served, the fourth is closed unanswered.
  const plain = [];
  for (const path of ["/health/live", "/health/live", "/api/realtime/events"]) {
    const c = await connectFrom(port, "127.0.0.3", `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    ok(await c.until(/^HTTP\/1\.1 (200|401)[^]*\r\n\r\n/), `${path} answered`);
    plain.push(c);
  }
  const before = s.monitor.connections.listener("management").refused.per_client;
  const fourth = await connectFrom(
    port,
    "127.0.0.3",
    `GET /health/live HTTP/1.1\r\nHost: ${host}\r\n\r\n`,
  );
  assertEquals(await fourth.until(/HTTP/), null, "past the cap: closed without an answer");
  assertEquals(s.monitor.connections.listener("management").refused.per_client, before + 1);
  // Feeds still count toward the listener's total.
  ok(s.monitor.connections.listener("management").open >= feeds.length + plain.length);
  for (const c of [...feeds, ...plain]) c.sock.destroy();
});
