/**
 * The AI pages in real chromium: an administrator configures the assistant and tests the
 * connection; an analyst asks, sees the answer stream in with the approval request the model
 * created; the administrator approves it on the approvals page and the data plane blocks the
 * address. The provider is the scripted chat-completions server on loopback.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { ADMIN, type ConsolePage, startConsoleKit, unlabelled } from "../_helpers/console.ts";
import { call, callJson, createUser, login } from "../_helpers/identity.ts";
import { startFakeProvider } from "../_helpers/openai_server.ts";
import { addSite, hit } from "../_helpers/protection.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";

const ANALYST = { username: "analyst", password: "Quartz-Falcon-77" };
const ROLES = {
  admin: ["*"],
  readonly: ["read:*", "read:cluster"],
  analyst: ["use:ai", "read:logs", "read:sites", "write:protection"],
};

async function textOf(p: ConsolePage, selector: string, re: RegExp): Promise<string> {
  const locator = p.page.locator(selector).first();
  await locator.waitFor();
  let text = "";
  for (let i = 0; i < 200; i++) {
    text = (await locator.textContent()) ?? "";
    if (re.test(text)) return text;
    await p.page.waitForTimeout(50);
  }
  throw new Error(`${selector}: ${JSON.stringify(text)} does not match ${re}`);
}

Deno.test({
  name:
    "the AI pages: settings with a connection test, a streamed answer that proposes a block, and its approval blocking the address (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using up = startUpstream();
  await using provider = startFakeProvider();
  await using kit = await startConsoleKit({ apisec: { permissions: ROLES } });
  const { server } = kit;
  addSite(server, up.url);
  await createUser(server, ANALYST.username, ANALYST.password, "analyst");
  const admin = await kit.signIn(ADMIN);

  await t.step("an administrator configures and tests the assistant", async () => {
    await admin.open("ai-settings");
    await textOf(admin, "main .notice", /No API key/);
    await admin.page.locator("#ai-base-url").fill(provider.baseUrl);
    await admin.page.locator("#ai-model").fill("test-model");
    await admin.page.locator("#ai-api-key").fill("sk-console-key-0000111122223333");
    await admin.page.locator("#ai-enabled").check();
    await admin.page.locator("main form.form button[type=submit]").click();
    await textOf(admin, "main .notice", /\*\*\*\*3333/);
    assertEquals(await unlabelled(admin.page), []);
    provider.script({ text: "OK" });
    await admin.page.locator("#ai-test").click();
    await textOf(admin, "main .toolbar .done", /test-model answered "OK"/);
    assertEquals(
      provider.requests[0]!.headers.get("authorization"),
      "Bearer sk-console-key-0000111122223333",
    );
    await admin.screenshot("ai-settings.configured");
  });

  await t.step(
    "an analyst asks and sees the answer stream in with the proposed block",
    async () => {
      const analyst = await kit.signIn(ANALYST);
      await analyst.open("ai-assistant");
      await textOf(analyst, "main .empty", /No conversation/);
      provider.script(
        {
          toolCalls: [{
            name: "block_ip",
            arguments: { cidr: "203.0.113.0/24", reason: "credential stuffing" },
          }],
        },
        { text: "I asked for approval to block 203.0.113.0/24." },
      );
      await analyst.page.locator("#ai-question").fill("Block the range behind the login attack");
      await analyst.page.locator("#ai-send").click();
      await textOf(analyst, "main .ai-approvals", /Block 203\.0\.113\.0\/24 on every site/);
      await textOf(
        analyst,
        "main .ai-transcript",
        /I asked for approval to block 203\.0\.113\.0\/24\./,
      );
      await textOf(analyst, "main .ai-transcript", /block_ip/);
      assertEquals(await unlabelled(analyst.page), []);
      await analyst.screenshot("ai-assistant.answered");
      ok(analyst.problems.length === 0, analyst.problems.join("\n"));
      assertEquals((await hit(server, "/", { ip: "203.0.113.9" })).status, 200, "not yet");
    },
  );

  await t.step("the administrator approves it and the data plane blocks the range", async () => {
    await admin.open("ai-approvals");
    await textOf(admin, "main table", /block_ip/);
    await admin.screenshot("ai-approvals.pending");
    await admin.page.locator("main button.approve").first().click();
    await textOf(admin, "main .empty", /No approval requests/);
    assertEquals((await hit(server, "/", { ip: "203.0.113.9" })).status, 403);
    const api = await login(server, ADMIN.username, ADMIN.password);
    const done = await callJson(server, "GET", "/api/ai/approvals?status=applied", {
      session: api,
    });
    const items = done.body.items as Array<{ decided_by: { name: string } }>;
    assertEquals(items.map((a) => a.decided_by.name), [ADMIN.username]);
    ok(admin.problems.length === 0, admin.problems.join("\n"));
  });

  await t.step("a new request appears on the open approvals page without a reload", async () => {
    const session = await login(server, ANALYST.username, ANALYST.password);
    const conv = await callJson(server, "POST", "/api/ai/conversations", { session, body: {} });
    provider.script(
      {
        toolCalls: [{
          name: "block_ip",
          arguments: { cidr: "198.51.100.0/24", reason: "port scanner" },
        }],
      },
      { text: "Requested." },
    );
    const asked = await call(server, "POST", `/api/ai/conversations/${conv.body.id}/messages`, {
      session,
      body: { content: "Block the scanner" },
    });
    await asked.text();
    // The page was opened before the request existed; the ai.approval event brings it in.
    await textOf(admin, "main table", /198\.51\.100\.0\/24/);
    ok(admin.problems.length === 0, admin.problems.join("\n"));
  });
});
