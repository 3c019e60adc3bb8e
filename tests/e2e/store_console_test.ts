/**
 * The management database and the controllers in a real chromium: the System page's "Management
 * database" panel and "Controllers" table and the Storage page's database panel, on the temporary
 * profile (in English and Simplified Chinese) and on the production profile against the real
 * PostgreSQL (the DSN shown with its password masked, the local file being the access log).
 */
import postgres from "postgres";
import { assertEquals, ok } from "../_helpers/assert.ts";
import { ADMIN, startConsoleKit, textMatches } from "../_helpers/console.ts";
import { HAS_CHROMIUM } from "../_helpers/browser.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../_helpers/services.ts";
import { testSchemaName } from "../_helpers/store.ts";
import { tempDir } from "../_helpers/temp.ts";

const pg = await hasPostgres();
const PASSWORD = "Sekrit-Db-Pw-77";

Deno.test({
  name:
    "the System and Storage pages show the SQLite management database and this controller (needs chromium)",
  ignore: ignoreWithout(HAS_CHROMIUM),
}, async (t) => {
  await using kit = await startConsoleKit();
  const admin = await kit.signIn(ADMIN);

  await t.step("System: the database panel and the controllers table", async () => {
    await admin.open("system");
    await textMatches(admin, "#db-engine", /SQLite/);
    await textMatches(admin, "#db-location", /waf\.db/);
    await textMatches(admin, "#db-state", /answering/);
    await textMatches(admin, "#db-latency", /\d ms/);
    await textMatches(admin, "#controllers table", /this one.*yes/s);
    // The scheduler's start-up run of the retention task took its lease.
    await textMatches(admin, "#controllers table", /ops\.access-log-retention/);
    await admin.screenshot("system-deployment");
    assertEquals(admin.problems, []);
  });

  await t.step("Storage: the same database panel above the local file", async () => {
    await admin.open("storage");
    await textMatches(admin, "#management-db", /temporary.*SQLite.*waf\.db/s);
    await textMatches(admin, "#store", /Store.*waf\.db/s);
    assertEquals(admin.problems, []);
  });

  await t.step("in Simplified Chinese", async () => {
    const zh = await kit.signIn(ADMIN, "zh-CN");
    await zh.open("system");
    await textMatches(zh, "#management-db h2", /管理数据库/);
    await textMatches(zh, "#controllers h2", /控制器/);
    await textMatches(zh, "#controllers table", /本控制器/);
    assertEquals(zh.problems, []);
    await zh.close();
  });
});

Deno.test({
  name:
    "on the production profile the pages show PostgreSQL with its password masked (needs chromium and postgresql)",
  ignore: ignoreWithout(HAS_CHROMIUM && pg),
}, async (t) => {
  const schema = testSchemaName();
  await using keys = await tempDir();
  const dsn = postgresDsn(pg).replace("postgres@", `postgres:${PASSWORD}@`);
  try {
    await using kit = await startConsoleKit({
      storage: {
        profile: "production",
        production: { postgresql: { dsn, schema }, secrets_file: `${keys}/deployment.key` },
      },
    });
    const admin = await kit.signIn(ADMIN);

    await t.step("System: PostgreSQL, its schema, and this controller", async () => {
      await admin.open("system");
      await textMatches(admin, "#db-profile", /production/);
      await textMatches(admin, "#db-engine", /PostgreSQL/);
      await textMatches(admin, "#db-location", new RegExp(`postgres:\\*\\*\\*@.*${schema}`));
      await textMatches(admin, "#db-state", /answering/);
      await textMatches(admin, "#controllers table", /this one.*yes/s);
      await textMatches(admin, "#controllers table", /ops\.access-log-retention, /);
      ok(!(await admin.page.locator("main").innerText()).includes(PASSWORD));
      await admin.screenshot("system-deployment-production");
      assertEquals(admin.problems, []);
    });

    await t.step("Storage: the database panel and the local access log", async () => {
      await admin.open("storage");
      await textMatches(admin, "#management-db", /PostgreSQL/);
      await textMatches(admin, "#store", /Local access log.*access_log\.db/s);
      await admin.screenshot("storage-production");
      ok(!(await admin.page.locator("main").innerText()).includes(PASSWORD));
      assertEquals(admin.problems, []);
    });
  } finally {
    const sql = postgres(postgresDsn(pg), { max: 1, onnotice: () => {} });
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await sql.end();
  }
});
