/**
 * The production database's start-up probe: a closed port on 127.0.0.1 (a port this test
 * listened on and closed) is named with the DSN's password masked; the real PostgreSQL passes.
 */
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { testConfig } from "../../_helpers/server.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../../_helpers/services.ts";
import { probeProductionStore } from "../../../mod/deployment/probe.ts";

const available = await hasPostgres();

function production(dsn: string, connectTimeout = "2s") {
  return testConfig({
    storage: {
      profile: "production",
      production: {
        postgresql: { dsn, connect_timeout: connectTimeout },
        secrets_file: "/nonexistent/deployment.key",
      },
    },
  });
}

/** A port nothing listens on: one the system gave this test, closed again. */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

Deno.test("probeProductionStore() names an unreachable database with its password masked", async () => {
  const port = closedPort();
  const problem = await probeProductionStore(
    production(`postgres://waf:hunter2-secret@127.0.0.1:${port}/waf`),
  );
  ok(problem, "an unreachable database is a problem");
  assertEquals(problem.code, "ErrProductionStorageUnavailable");
  assertEquals(problem.path, "storage.production.postgresql.dsn");
  assertMatch(
    problem.message,
    new RegExp(`"postgres://waf:\\*\\*\\*@127\\.0\\.0\\.1:${port}/waf"`),
  );
  ok(!problem.message.includes("hunter2"), problem.message);
});

Deno.test("probeProductionStore() has nothing to say about the temporary profile or a missing DSN", async () => {
  assertEquals(await probeProductionStore(testConfig()), undefined);
  const noDsn = testConfig({
    storage: { profile: "production", production: { secrets_file: "/x/deployment.key" } },
  });
  assertEquals(await probeProductionStore(noDsn), undefined, "missingProductionKeys names it");
});

Deno.test({
  name: "probeProductionStore() passes the reachable PostgreSQL (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    assertEquals(await probeProductionStore(production(postgresDsn(available))), undefined);
  },
});

Deno.test({
  name: "probeProductionStore() names a database the server does not have (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    const dsn = postgresDsn(available).replace(/\/test$/, "/waf_no_such_database");
    const problem = await probeProductionStore(production(dsn));
    ok(problem);
    assertMatch(problem.message, /waf_no_such_database/);
  },
});
