/** Channel messages carry the console page a notification is about when there is a URL for it. */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { httpRequest, mailText, type Message } from "../../../mod/notify/formats.ts";

const BASE: Message = {
  event: "alap.temp_block",
  level: "warning",
  title: "ALAP proposes blocking 192.0.2.66 for 60 min: review it",
  body: "attack score 190 within 300s on site shop",
  time: "2026-01-01T00:00:00.000Z",
  notification_id: "n1",
  url: "https://waf.example.com/console/alap/ala_0123",
  data: {},
};
const SENDING = { deliveryId: "d1", nowMs: 0 };
const URL_SECRET = { url: "https://hooks.example/x" };

Deno.test("every channel's message names the console page's URL when it has one", () => {
  const url = BASE.url!;
  const webhook = JSON.parse(httpRequest("webhook", BASE, URL_SECRET, SENDING).body);
  assertEquals(webhook.url, url);
  for (const type of ["slack", "dingtalk", "feishu", "wecom"] as const) {
    const body = httpRequest(type, BASE, URL_SECRET, SENDING).body;
    ok(body.includes(url), `${type}: ${body}`);
  }
  ok(mailText(BASE).text.split("\n").includes(url), mailText(BASE).text);
});

Deno.test("without a console URL the messages are the title and body alone", () => {
  const m = { ...BASE, url: null };
  assertEquals(JSON.parse(httpRequest("webhook", m, URL_SECRET, SENDING).body).url, null);
  assertEquals(
    JSON.parse(httpRequest("slack", m, URL_SECRET, SENDING).body).text,
    `*${m.title}*\n${m.body}`,
  );
  ok(!mailText(m).text.includes("https://"), mailText(m).text);
});
