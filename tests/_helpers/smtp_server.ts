/**
 * A minimal SMTP server for tests, on loopback: greeting, EHLO (advertising STARTTLS, and AUTH
 * once the connection is encrypted), STARTTLS with a test certificate, AUTH PLAIN and LOGIN,
 * MAIL, RCPT, DATA, RSET, NOOP, QUIT. It keeps every message it receives with the envelope, the
 * credentials used and whether the message travelled over TLS, so a test can check all three.
 */
import net from "node:net";
import tls from "node:tls";
import type { Pem } from "../../mod/tls/x509.ts";

export interface ReceivedMail {
  readonly from: string;
  readonly to: string[];
  readonly data: string;
  readonly tls: boolean;
  readonly auth: { readonly user: string; readonly pass: string } | null;
}

export interface SmtpServer extends AsyncDisposable {
  readonly port: number;
  readonly messages: ReceivedMail[];
  /** Resolves with the next message received (or one already received and not yet taken). */
  next(): Promise<ReceivedMail>;
  close(): Promise<void>;
}

export interface SmtpServerOptions {
  readonly pem: Pem;
  /** Credentials AUTH accepts; without them AUTH is not offered. */
  readonly credentials?: { readonly user: string; readonly pass: string };
  /** Refuse MAIL before STARTTLS (530), like a server that requires encryption. */
  readonly requireTls?: boolean;
}

export async function startSmtpServer(options: SmtpServerOptions): Promise<SmtpServer> {
  const messages: ReceivedMail[] = [];
  let taken = 0;
  const waiters: Array<(m: ReceivedMail) => void> = [];
  const sockets = new Set<net.Socket | tls.TLSSocket>();

  const deliver = (m: ReceivedMail) => {
    messages.push(m);
    const w = waiters.shift();
    if (w) {
      taken++;
      w(m);
    }
  };

  function session(plain: net.Socket): void {
    let socket: net.Socket | tls.TLSSocket = plain;
    let secure = false;
    let buffer = "";
    let inData = false;
    let data: string[] = [];
    let from = "";
    let to: string[] = [];
    let auth: { user: string; pass: string } | null = null;
    let pendingLogin: { step: "user" | "pass"; user?: string } | null = null;
    sockets.add(plain);
    const send = (line: string) => socket.write(line + "\r\n");

    const handle = (line: string) => {
      if (inData) {
        if (line === ".") {
          inData = false;
          deliver({ from, to, data: data.join("\r\n"), tls: secure, auth });
          data = [];
          send("250 2.0.0 queued");
        } else data.push(line.startsWith("..") ? line.slice(1) : line);
        return;
      }
      if (pendingLogin) {
        const value = atob(line);
        if (pendingLogin.step === "user") {
          pendingLogin = { step: "pass", user: value };
          send("334 UGFzc3dvcmQ6");
        } else {
          checkAuth(pendingLogin.user ?? "", value);
          pendingLogin = null;
        }
        return;
      }
      const [verb = "", ...rest] = line.split(" ");
      const arg = rest.join(" ");
      switch (verb.toUpperCase()) {
        case "EHLO":
        case "HELO": {
          const lines = ["250-test.local"];
          if (!secure) lines.push("250-STARTTLS");
          if (secure && options.credentials) lines.push("250-AUTH PLAIN LOGIN");
          lines.push("250 8BITMIME");
          socket.write(lines.join("\r\n") + "\r\n");
          return;
        }
        case "STARTTLS": {
          if (secure) return send("503 already encrypted");
          send("220 2.0.0 ready to start TLS");
          socket.removeAllListeners("data");
          const upgraded = new tls.TLSSocket(plain, {
            isServer: true,
            cert: options.pem.cert,
            key: options.pem.key,
          });
          sockets.add(upgraded);
          socket = upgraded;
          secure = true;
          buffer = "";
          upgraded.on("data", onData);
          upgraded.on("error", () => {});
          return;
        }
        case "AUTH": {
          const [mech = "", initial] = arg.split(" ");
          if (!secure || !options.credentials) return send("503 5.5.1 AUTH not available");
          if (mech.toUpperCase() === "PLAIN" && initial) {
            const [, user = "", pass = ""] = atob(initial).split("\0");
            return checkAuth(user, pass);
          }
          if (mech.toUpperCase() === "LOGIN") {
            pendingLogin = { step: "user" };
            return send("334 VXNlcm5hbWU6");
          }
          return send("504 5.5.4 mechanism not supported");
        }
        case "MAIL":
          if (options.requireTls && !secure) return send("530 5.7.0 must issue STARTTLS first");
          if (options.credentials && !auth) return send("530 5.7.0 authentication required");
          from = arg.replace(/^FROM:\s*/i, "").replace(/[<>]/g, "").split(" ")[0] ?? "";
          to = [];
          return send("250 2.1.0 ok");
        case "RCPT":
          to.push(arg.replace(/^TO:\s*/i, "").replace(/[<>]/g, ""));
          return send("250 2.1.5 ok");
        case "DATA":
          if (to.length === 0) return send("503 5.5.1 no recipients");
          inData = true;
          return send("354 end data with <CR><LF>.<CR><LF>");
        case "RSET":
          from = "";
          to = [];
          return send("250 ok");
        case "NOOP":
          return send("250 ok");
        case "QUIT":
          send("221 bye");
          socket.end();
          return;
        default:
          return send("502 5.5.2 command not recognised");
      }
    };
    const checkAuth = (user: string, pass: string) => {
      const c = options.credentials!;
      if (user === c.user && pass === c.pass) {
        auth = { user, pass };
        send("235 2.7.0 authenticated");
      } else send("535 5.7.8 authentication failed");
    };
    function onData(chunk: Uint8Array | string) {
      buffer += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
      let i: number;
      while ((i = buffer.indexOf("\r\n")) >= 0) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        handle(line);
      }
    }
    plain.on("data", onData);
    plain.on("error", () => {});
    plain.on("close", () => sockets.delete(plain));
    send("220 test.local ESMTP test server");
  }

  const server = net.createServer(session);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  const close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    port,
    messages,
    next: () =>
      taken < messages.length
        ? Promise.resolve(messages[taken++]!)
        : new Promise((resolve) => waiters.push(resolve)),
    close,
    [Symbol.asyncDispose]: close,
  };
}
