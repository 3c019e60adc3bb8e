/**
 * Changing one's own password in a real headless chromium (issue #37, item 2): the account page
 * sends the current password beside the new one, for every user (a readonly one too), and the
 * Users page asks for it when an administrator edits their own account, not another's.
 */
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { ignoreWithout } from "../_helpers/services.ts";
import { assertEquals, ok } from "../_helpers/assert.ts";
import { ADMIN, settle, startConsoleKit } from "../_helpers/console.ts";
import { callJson, createUser } from "../_helpers/identity.ts";

const VIEWER = { username: "viewer", password: "Glacier-Moth-42" };
const NEW_PASSWORD = "Harbour-Quill-73";

const signsIn = async (
  server: Parameters<typeof callJson>[0],
  username: string,
  password: string,
) =>
  (await callJson(server, "POST", "/api/auth/login", { body: { username, password } }))
    .status === 200;

Deno.test({
  name: "the console changes one's own password only with the current one (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using kit = await startConsoleKit();
  const { server } = kit;

  await t.step("a readonly user changes their password on the account page", async () => {
    await createUser(server, VIEWER.username, VIEWER.password, "readonly");
    const viewer = await kit.signIn(VIEWER);
    await viewer.open("account");
    await viewer.page.locator("#current-password").fill("Not-The-Pass-1");
    await viewer.page.locator("#new-password").fill(NEW_PASSWORD);
    await viewer.page.locator("#password-change").click();
    await viewer.page.locator("#password .error-box code", { hasText: "PASSWORD_INVALID" })
      .waitFor();
    assertEquals(await signsIn(server, VIEWER.username, NEW_PASSWORD), false);
    await viewer.page.locator("#current-password").fill(VIEWER.password);
    await viewer.page.locator("#password-change").click();
    // A new password ends the account's sessions: the console goes back to the sign-in page.
    await viewer.page.waitForURL(`${server.managementUrl}/login?next=%2Fconsole%2Faccount`);
    assertEquals(await signsIn(server, VIEWER.username, NEW_PASSWORD), true);
    assertEquals(await signsIn(server, VIEWER.username, VIEWER.password), false);
    ok(viewer.problems.length === 0, viewer.problems.join("\n"));
    await viewer.close();
  });

  await t.step(
    "the Users page asks for the current password on one's own account only",
    async () => {
      const admin = await kit.signIn(ADMIN);
      await admin.open("users");
      await settle(admin);
      await admin.page.locator("tr", { hasText: VIEWER.username }).locator("button", {
        hasText: "Edit",
      }).click();
      await admin.page.locator("#edit-password").waitFor();
      assertEquals(await admin.page.locator("#edit-current-password").count(), 0, "another's");
      await admin.page.locator("button", { hasText: "Close" }).click();
      await admin.page.locator("tr", { hasText: ADMIN.username }).filter({ hasText: "you" })
        .locator("button", { hasText: "Edit" }).click();
      await admin.page.locator("#edit-current-password").waitFor();
      assertEquals(
        await admin.page.locator("#edit-current-password").getAttribute("autocomplete"),
        "current-password",
      );
      await admin.page.locator("#edit-password").fill(NEW_PASSWORD);
      await admin.page.locator("#edit-current-password").fill(ADMIN.password);
      await admin.page.locator(".panel form button[type=submit]").click();
      await admin.page.waitForURL(new RegExp(`^${server.managementUrl}/login`));
      assertEquals(await signsIn(server, ADMIN.username, NEW_PASSWORD), true);
      ok(admin.problems.length === 0, admin.problems.join("\n"));
      await admin.close();
    },
  );
});
