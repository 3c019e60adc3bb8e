/**
 * The production profile's key file through a whole composition: every area seals with the
 * file's key (no `totp.key` in the data directory), a second controller with a copy of the file
 * opens what the first sealed, and `waf serve` with the file missing refuses, naming it. The
 * start-up probe needs the real PostgreSQL; the store is still the SQLite file of the data
 * directory until the PostgreSQL store lands.
 */
import { assertEquals, assertMatch, ok } from "../_helpers/assert.ts";
import { composeAreas } from "../../app/compose.ts";
import { createMemoryLogger } from "../../mod/core/logger.ts";
import { FakeClock } from "../../mod/core/clock.ts";
import { systemRandom } from "../../mod/core/random.ts";
import { testConfig } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp.ts";
import { cli } from "../_helpers/cli.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../_helpers/services.ts";
import { ADMIN, callJson, completeSetup, login } from "../_helpers/identity.ts";
import { codeAt, enableTwoFactor, TOKENS_ON } from "../_helpers/api_access.ts";
import { parseKeyFile } from "../../mod/deployment/keys.ts";
import { createSecretBox } from "../../mod/core/secret_box.ts";

const available = await hasPostgres();
/** One schema per run of this file (the controllers of each test share it). */
let SCHEMA = `keys_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
const PEER = { transport: "tcp" as const, hostname: "127.0.0.1", port: 40_000 };

function productionYaml(secretsFile: string): Record<string, unknown> {
  return {
    ...TOKENS_ON,
    storage: {
      profile: "production",
      production: {
        postgresql: { dsn: postgresDsn(available), schema: SCHEMA },
        secrets_file: secretsFile,
      },
    },
  };
}

/** One controller composed in-process on `dir` (API access and identity). */
async function controller(dir: string, secretsFile: string, clock: FakeClock) {
  const composed = await composeAreas(
    { config: testConfig(productionYaml(secretsFile)), dataDir: dir, areas: ["apiAccess"] },
    { clock, random: systemRandom, logger: createMemoryLogger(), env: {} },
  );
  await composed.start("http://127.0.0.1:9443");
  return Object.assign(composed, {
    dir,
    clock,
    api: async (path: string, init?: RequestInit) =>
      await composed.app.request(`http://127.0.0.1:9443${path}`, init, {
        remoteAddr: PEER,
        tls: false,
      }),
    async [Symbol.asyncDispose]() {
      await composed.close();
    },
  });
}

Deno.test({
  name:
    "production: secrets are sealed with the key file's key, and a controller with a copy opens them (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    SCHEMA = `keys_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
    await using dir = await tempDir();
    const data = `${dir}/data`;
    const file = `${dir}/deployment.key`;
    const clock = new FakeClock(Date.now());
    let secret: string;
    {
      await using a = await controller(data, file, clock);
      await completeSetup(a);
      const me = await callJson(a, "GET", "/api/auth/session", {
        session: await login(a, ADMIN.username, ADMIN.password),
      });
      const id = (me.body.user as { id: string }).id;
      secret = await enableTwoFactor(a, ADMIN, id);
      const row = a.db.prepare("SELECT totp_secret_enc FROM users WHERE id = ?").get(id) as {
        totp_secret_enc: string;
      };
      const keys = parseKeyFile(file, await Deno.readTextFile(file));
      const opens = (key: Uint8Array) =>
        createSecretBox({ key }, systemRandom).open(row.totp_secret_enc, id)
          .then(() => true, () => false);
      ok(!(await opens(systemRandom.bytes(32))), "another key does not open it");
      const opened = await opens(keys.sealing);
      ok(opened, "the TOTP secret is sealed under the key file's sealing key");
      const names = [...Deno.readDirSync(data)].map((e) => e.name);
      ok(!names.includes("totp.key") && !names.includes("auth.key"), names.join(", "));
    }
    // Controller B: another path holding a copy of the file, the same store.
    const copy = `${dir}/copy.key`;
    await Deno.copyFile(file, copy);
    await using b = await controller(data, copy, clock);
    clock.advance(60_000);
    const r = await callJson(b, "POST", "/api/auth/login", {
      body: { ...ADMIN, totp_code: codeAt(b, secret) },
    });
    assertEquals(r.status, 200, JSON.stringify(r.body));
  },
});

Deno.test({
  name:
    "production: serve refuses to start, naming the key file, when the deployment's file is missing (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    SCHEMA = `keys_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
    await using dir = await tempDir();
    const data = `${dir}/data`;
    const file = `${dir}/deployment.key`;
    {
      // A first start made the deployment; then its key file went missing.
      await using a = await controller(data, file, new FakeClock(Date.now()));
      ok(a.db);
    }
    await Deno.remove(file);
    const config = `${dir}/waf.yaml`;
    await Deno.writeTextFile(
      config,
      `server:\n  data:\n    listen: "127.0.0.1:0"\n  management:\n    listen: "127.0.0.1:0"\n` +
        `storage:\n  profile: production\n  production:\n    postgresql:\n      dsn: "${
          postgresDsn(available)
        }"\n      schema: ${SCHEMA}\n    secrets_file: ${file}\n`,
    );
    const before = [...Deno.readDirSync(data)].map((e) => e.name).sort();
    const serve = await cli(["serve", "--config", config, "--data-dir", data]);
    assertEquals(serve.code, 1, serve.stderr);
    assertMatch(
      serve.stderr,
      new RegExp(`The deployment key file "${file}" cannot be used: it does not exist`),
    );
    assertEquals(await Deno.stat(file).then(() => true, () => false), false, "no key minted");
    assertEquals([...Deno.readDirSync(data)].map((e) => e.name).sort(), before);
  },
});
