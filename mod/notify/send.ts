/**
 * One attempt to send a message to a channel: an e-mail through SMTP, or the HTTP request of a
 * webhook-style channel with the answer checked the way its service reports errors. Throws on
 * failure, with the HTTP status when there was one.
 */
import type { OpenChannel } from "./channels.ts";
import { answerProblem, httpRequest, mailText, type Message, type Sending } from "./formats.ts";
import { sendMail } from "./smtp.ts";

/** The attempt's delivery, clock reading and deadline. */
export interface Attempt extends Sending {
  readonly timeoutMs: number;
}

/** Sends `message`; resolves with the HTTP status (null for e-mail) when the channel took it. */
export async function sendMessage(
  channel: OpenChannel,
  message: Message,
  attempt: Attempt,
): Promise<{ status: number | null }> {
  const { timeoutMs } = attempt;
  if (channel.type === "email") {
    const s = channel.settings as {
      host: string;
      port: number;
      security: "starttls" | "tls" | "none";
      username?: string;
      from: string;
      to: string[];
      ca?: string;
    };
    const { subject, text } = mailText(message);
    await sendMail({ ...s, password: channel.secrets.password, timeoutMs }, {
      from: s.from,
      to: s.to,
      subject,
      text,
    });
    return { status: null };
  }
  const plan = httpRequest(channel.type, message, channel.secrets, attempt);
  const res = await fetch(plan.url, {
    method: "POST",
    headers: plan.headers,
    body: plan.body,
    redirect: "manual",
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  const problem = answerProblem(channel.type, res.status, text);
  if (problem !== null) throw Object.assign(new Error(problem), { status: res.status });
  return { status: res.status };
}
