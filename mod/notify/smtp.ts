/**
 * The one wrapper of `nodemailer` (chosen over a hand-written client: it is maintained, builds
 * correct MIME with encoded UTF-8 headers, and speaks STARTTLS and AUTH; checked to work in Deno
 * through `node:net`/`node:tls`). `starttls` requires the upgrade (a server that does not offer
 * STARTTLS fails the delivery rather than receiving the password in clear); `tls` is implicit TLS
 * (port 465); `none` sends in clear and is meant for a relay on the same host.
 */

export interface SmtpSettings {
  readonly host: string;
  readonly port: number;
  readonly security: "starttls" | "tls" | "none";
  readonly username?: string;
  readonly password?: string;
  /** PEM of a private CA (otherwise the system's roots). */
  readonly ca?: string;
  readonly timeoutMs: number;
}

export interface Mail {
  readonly from: string;
  readonly to: readonly string[];
  readonly subject: string;
  readonly text: string;
}

interface Transport {
  sendMail(mail: Record<string, unknown>): Promise<{ response?: string }>;
  close(): void;
}

/** Sends one message; resolves with the server's final answer, rejects with its error. */
export async function sendMail(s: SmtpSettings, mail: Mail): Promise<string> {
  // Loaded at the first message, not at start: it weighs on the main isolate's live heap for a
  // path taken only when a notification goes out by mail (docs/bench/2026-11-25-live-heap.md).
  const { default: nodemailer } = await import("nodemailer");
  const transport = (nodemailer as unknown as {
    createTransport(o: Record<string, unknown>): Transport;
  }).createTransport({
    host: s.host,
    port: s.port,
    secure: s.security === "tls",
    requireTLS: s.security === "starttls",
    ignoreTLS: s.security === "none",
    auth: s.username ? { user: s.username, pass: s.password ?? "" } : undefined,
    tls: s.ca ? { ca: [s.ca] } : undefined,
    connectionTimeout: s.timeoutMs,
    greetingTimeout: s.timeoutMs,
    socketTimeout: s.timeoutMs,
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  try {
    const info = await transport.sendMail({
      from: mail.from,
      to: [...mail.to],
      subject: mail.subject,
      text: mail.text,
    });
    return info.response ?? "";
  } finally {
    transport.close();
  }
}
