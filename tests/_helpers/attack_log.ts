/**
 * Attack-log fixtures: a request blocked (or challenged) by every kind of check the data plane
 * has, through the real controls configured over the API, so a test can compare what the log,
 * the dashboard and the console make of each.
 */
import { assertEquals } from "./assert.ts";
import { localServer } from "./local_server.ts";
import { apiFor, type Hit, hit } from "./protection.ts";
import type { TestServer } from "./server.ts";

/** What each kind of block is, with the class the log and the dashboard must both give it. */
export const BLOCK_KINDS = {
  ip_list: "ip_list",
  acl: "acl",
  custom_rule: "custom_rule",
  threat_intel: "threat_intel",
  bot: "bot",
  rate_limit: "rate_limit",
  api_rate_limit: "api_rate_limit",
  api_schema: "api_schema",
  engine: "sqli",
} as const;

export type BlockKind = keyof typeof BLOCK_KINDS;

export interface EveryBlock {
  /** One blocked request of each kind. */
  readonly blocked: Record<BlockKind, Hit>;
  /** A request challenged by the bot policy. */
  readonly challenged: Hit;
  /** The ids of what was configured. */
  readonly ids: { ipEntry: string; customRule: string; feed: string };
}

async function ok(r: Response, what: string): Promise<Record<string, unknown>> {
  const body = await r.json();
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(body)}`);
  return body;
}

/**
 * Configures one control of each kind on the server's site (host `shop.test`, trusting the
 * loopback peer's X-Forwarded-For) and sends the request each one stops, each from its own
 * address (the global rate limit is turned off again afterwards).
 */
export async function blockEveryKind(s: TestServer): Promise<EveryBlock> {
  const api = apiFor(s);
  const entry = await ok(
    await api("POST", "/api/protection/ip-lists", {
      action: "block",
      cidr: "198.51.100.10/32",
      note: "known scanner",
    }),
    "ip entry",
  );
  await ok(
    await api("POST", "/api/protection/acl-rules", {
      name: "no /acl",
      action: "block",
      conditions: { path: { prefix: "/acl" } },
    }),
    "acl rule",
  );
  const rule = await ok(
    await api("POST", "/api/rules/custom", {
      name: "no wp-admin",
      target: { kind: "path" },
      pattern: "^/wp-admin",
      action: "block",
    }),
    "custom rule",
  );
  await ok(
    await api("POST", "/api/protection/bot-policies", { path_prefix: "/bot", mode: "all" }),
    "bot policy",
  );
  await ok(
    await api("PUT", "/api/apisec/config", {
      rate_limits: [{
        id: "login",
        method: "POST",
        path_pattern: "^/login$",
        requests: 1,
        window: "1m",
      }],
      validation: {
        enabled: true,
        schemas: [{
          id: "orders",
          method: "POST",
          path_pattern: "^/orders$",
          required_params: ["sku"],
        }],
      },
    }),
    "api security",
  );
  await using feeds = localServer(() => new Response("203.0.113.0/24\n"));
  const feed = await ok(
    await api("POST", "/api/threat-intel/feeds", {
      name: "drop",
      url: `${feeds.url}/drop.txt`,
      action: "block",
    }),
    "feed",
  );
  await ok(await api("POST", `/api/threat-intel/feeds/${feed.id}/sync`), "feed sync");

  const post = (body: string) => ({
    method: "POST",
    body,
    headers: { "content-type": "text/plain" },
  });
  const login = { ip: "192.0.2.60", init: post("x") };
  assertEquals((await hit(s, "/login", login)).status, 200);
  const blocked = {
    ip_list: await hit(s, "/", { ip: "198.51.100.10" }),
    acl: await hit(s, "/acl/x", { ip: "192.0.2.51" }),
    custom_rule: await hit(s, "/wp-admin/setup.php", { ip: "192.0.2.52" }),
    threat_intel: await hit(s, "/", { ip: "203.0.113.9" }),
    bot: await hit(s, "/.well-known/waf/challenge", {
      ip: "192.0.2.54",
      init: {
        method: "POST",
        body: "token=forged&answer=1&ret=/",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      },
    }),
    api_rate_limit: await hit(s, "/login", login),
    api_schema: await hit(s, "/orders", { ip: "192.0.2.56", init: post("{}") }),
    engine: await hit(s, "/search?q=1%20union%20select%20password%20from%20users", {
      ip: "192.0.2.57",
    }),
  } as Record<BlockKind, Hit>;
  const challenged = await hit(s, "/bot/page", { ip: "192.0.2.58" });
  await ok(
    await api("PUT", "/api/protection/rate-limit", {
      enabled: true,
      requests: 1,
      window_seconds: 600,
      burst: 0,
    }),
    "rate limit",
  );
  await hit(s, "/", { ip: "192.0.2.59" });
  blocked.rate_limit = await hit(s, "/", { ip: "192.0.2.59" });
  await ok(await api("PUT", "/api/protection/rate-limit", { enabled: false }), "rate limit off");
  for (const [kind, h] of Object.entries(blocked)) {
    if (h.action !== "block" || (h.status === 429) !== kind.includes("rate_limit")) {
      throw new Error(`${kind}: not blocked: ${h.status} ${h.action} ${JSON.stringify(h.chain)}`);
    }
  }
  if (challenged.action !== "challenge") throw new Error(`not challenged: ${challenged.action}`);
  return {
    blocked,
    challenged,
    ids: { ipEntry: String(entry.id), customRule: String(rule.id), feed: String(feed.id) },
  };
}
