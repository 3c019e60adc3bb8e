/**
 * Notification channels: their types, the events they can subscribe to, and the validation of
 * what the API accepts. Secrets (webhook URLs, which carry their keys, signing secrets and SMTP
 * passwords) are split from the rest when stored: they are sealed, never returned.
 */
import { z } from "zod";

export const CHANNEL_TYPES = ["webhook", "slack", "dingtalk", "feishu", "wecom", "email"] as const;
export type ChannelType = typeof CHANNEL_TYPES[number];

/**
 * What a channel can subscribe to. Producers call `notify(kind, ...)`; kinds whose producer
 * arrives with a later feature (cluster nodes, scheduled tasks) can be subscribed already.
 */
export const CHANNEL_EVENTS = [
  "attack.spike",
  "upstream.down",
  "upstream.recovered",
  "certificate.expiring",
  "api_token.cleanup",
  "node.offline",
  "task.failed",
  "login.lockout",
  "time.offset",
  "ai.approval",
  "acme.failed",
  "user.password.reset",
  "alap.temp_block",
  "alap.ip_ban",
] as const;
export type ChannelEvent = typeof CHANNEL_EVENTS[number];

const httpUrl = z.string().max(2048).refine((v) => {
  try {
    const u = new URL(v);
    return u.protocol === "https:" || u.protocol === "http:";
  } catch {
    return false;
  }
}, { message: "expected an http:// or https:// URL" });

const email = z.string().max(254).regex(/^[^\s@<>]+@[^\s@<>]+$/, "expected an e-mail address");

/** Settings that may be shown (no secret among them), per type. */
export const publicSettings = {
  webhook: z.strictObject({}),
  slack: z.strictObject({}),
  dingtalk: z.strictObject({}),
  feishu: z.strictObject({}),
  wecom: z.strictObject({}),
  email: z.strictObject({
    host: z.string().min(1).max(253),
    port: z.number().int().min(1).max(65535).default(587),
    /** `starttls` (required upgrade, default), `tls` (implicit, port 465) or `none`. */
    security: z.enum(["starttls", "tls", "none"]).default("starttls"),
    username: z.string().max(256).optional(),
    from: email,
    to: z.array(email).min(1).max(50),
    /** PEM of a private CA that signed the server's certificate. */
    ca: z.string().max(20_000).optional(),
  }),
} as const;

/** The secret part, per type (each optional on update: omitted keeps the stored value). */
export const secretSettings = {
  webhook: z.strictObject({ url: httpUrl, secret: z.string().min(1).max(512).optional() }),
  slack: z.strictObject({ url: httpUrl }),
  dingtalk: z.strictObject({ url: httpUrl, secret: z.string().min(1).max(512).optional() }),
  feishu: z.strictObject({ url: httpUrl, secret: z.string().min(1).max(512).optional() }),
  wecom: z.strictObject({ url: httpUrl }),
  email: z.strictObject({ password: z.string().min(1).max(1024).optional() }),
} as const;

export type Secrets = { url?: string; secret?: string; password?: string };

export const channelInput = z.strictObject({
  name: z.string().min(1).max(100),
  type: z.enum(CHANNEL_TYPES),
  enabled: z.boolean().default(true),
  events: z.array(z.enum(CHANNEL_EVENTS)).max(CHANNEL_EVENTS.length).default([]),
  /** Type-specific settings, secrets included (validated per type by the service). */
  settings: z.record(z.string(), z.unknown()).default({}),
});

export const channelPatch = z.strictObject({
  name: z.string().min(1).max(100).optional(),
  enabled: z.boolean().optional(),
  events: z.array(z.enum(CHANNEL_EVENTS)).max(CHANNEL_EVENTS.length).optional(),
  settings: z.record(z.string(), z.unknown()).optional(),
});

export type ChannelInput = z.infer<typeof channelInput>;
export type ChannelPatch = z.infer<typeof channelPatch>;
