/**
 * The message formats of each webhook-style channel, as their services document them, and their
 * signatures:
 * - webhook: our JSON; with a secret, `X-WAF-Timestamp` (Unix seconds) and `X-WAF-Signature:
 *   sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`;
 * - Slack incoming webhook: `{"text": ...}` (mrkdwn);
 * - DingTalk custom robot: `{"msgtype":"markdown",...}`; with a secret, `timestamp` (ms) and
 *   `sign` = base64(HMAC-SHA256(secret, "<timestamp>\n<secret>")) in the query;
 * - Feishu/Lark custom bot: `{"msg_type":"text",...}`; with a secret, `timestamp` (s) and `sign`
 *   = base64(HMAC-SHA256 keyed with "<timestamp>\n<secret>" over an empty message) in the body;
 * - WeCom group robot: `{"msgtype":"markdown",...}`.
 * The answer is checked the way each service reports errors (Slack `ok`, `errcode`/`code` 0).
 * A message about a console page ends with that page's URL when the console's public URL
 * (`server.management.base_url`) is set (`url`).
 */
import { hmacSha256 } from "../core/digest.ts";
import type { ChannelType, Secrets } from "./channel_schema.ts";

/** What every channel delivers. */
export interface Message {
  readonly event: string;
  readonly level: string;
  readonly title: string;
  readonly body: string;
  /** ISO time the notification was raised. */
  readonly time: string;
  readonly notification_id: string | null;
  /** The console page the notification is about, as a full URL; null without one. */
  readonly url: string | null;
  readonly data: Readonly<Record<string, unknown>>;
}

export interface HttpRequestPlan {
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** The body, then the console page's URL on a line of its own when there is one. */
const bodyOf = (m: Message) => m.url ? `${m.body}\n${m.url}` : m.body;
const plain = (m: Message) => `${m.title}\n${bodyOf(m)}`;

/** Which delivery a request carries and when it is sent (what a signature covers). */
export interface Sending {
  readonly deliveryId: string;
  readonly nowMs: number;
}

/** The HTTP request a webhook-style channel sends; `sending.nowMs` signs it. */
export function httpRequest(
  type: Exclude<ChannelType, "email">,
  m: Message,
  secrets: Secrets,
  sending: Sending,
): HttpRequestPlan {
  const { deliveryId, nowMs } = sending;
  const url = secrets.url!;
  const json = { "content-type": "application/json" };
  switch (type) {
    case "webhook": {
      const body = JSON.stringify({ ...m, delivery_id: deliveryId });
      const headers: Record<string, string> = {
        ...json,
        "user-agent": "waf-notify",
        "x-waf-event": m.event,
        "x-waf-delivery": deliveryId,
      };
      if (secrets.secret) {
        const ts = String(Math.floor(nowMs / 1000));
        headers["x-waf-timestamp"] = ts;
        headers["x-waf-signature"] = `sha256=${hmacSha256(secrets.secret, `${ts}.${body}`, "hex")}`;
      }
      return { url, headers, body };
    }
    case "slack":
      return {
        url,
        headers: json,
        body: JSON.stringify({ text: `*${m.title}*\n${m.url ? `${m.body}\n<${m.url}>` : m.body}` }),
      };
    case "dingtalk": {
      let signed = url;
      if (secrets.secret) {
        const ts = String(nowMs);
        const sign = hmacSha256(secrets.secret, `${ts}\n${secrets.secret}`, "base64");
        signed += `${url.includes("?") ? "&" : "?"}timestamp=${ts}&sign=${
          encodeURIComponent(sign)
        }`;
      }
      return {
        url: signed,
        headers: json,
        body: JSON.stringify({
          msgtype: "markdown",
          markdown: { title: m.title, text: `### ${m.title}\n\n${markdownBody(m)}` },
        }),
      };
    }
    case "feishu": {
      const payload: Record<string, unknown> = { msg_type: "text", content: { text: plain(m) } };
      if (secrets.secret) {
        const ts = String(Math.floor(nowMs / 1000));
        payload.timestamp = ts;
        payload.sign = hmacSha256(`${ts}\n${secrets.secret}`, "", "base64");
      }
      return { url, headers: json, body: JSON.stringify(payload) };
    }
    case "wecom":
      return {
        url,
        headers: json,
        body: JSON.stringify({
          msgtype: "markdown",
          markdown: { content: `**${m.title}**\n${markdownBody(m)}` },
        }),
      };
  }
}

/** The body and, when there is one, a Markdown link to the console page. */
function markdownBody(m: Message): string {
  return m.url ? `${m.body}\n\n[${m.url}](${m.url})` : m.body;
}

/** Null when the service accepted the message, otherwise why not. */
export function answerProblem(type: ChannelType, status: number, text: string): string | null {
  if (status < 200 || status > 299) return `HTTP ${status}: ${text.slice(0, 200)}`;
  if (type === "slack") {
    return text.trim() === "ok" || text.trim() === "" ? null : text.slice(0, 200);
  }
  if (type === "dingtalk" || type === "wecom" || type === "feishu") {
    try {
      const j = JSON.parse(text) as {
        errcode?: number;
        code?: number;
        errmsg?: string;
        msg?: string;
      };
      const code = j.errcode ?? j.code ?? 0;
      return code === 0 ? null : `error ${code}: ${j.errmsg ?? j.msg ?? ""}`.slice(0, 200);
    } catch {
      return null;
    }
  }
  return null;
}

/** The e-mail subject and text of a message. */
export function mailText(m: Message): { subject: string; text: string } {
  const facts = Object.entries(m.data).map(([k, v]) =>
    `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`
  );
  return {
    subject: `[waf] ${m.title}`,
    text: [bodyOf(m), "", `event: ${m.event}`, `level: ${m.level}`, `time: ${m.time}`, ...facts]
      .join("\n"),
  };
}
