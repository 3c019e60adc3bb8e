/** The production profile's keys as the code reads them, and what is missing from a file. */
import { assertEquals, ok } from "../../_helpers/assert.ts";
import { parseConfigText } from "../../../mod/config/config.ts";
import {
  missingProductionKeys,
  productionStoreOptions,
  redactDsn,
} from "../../../mod/config/production.ts";
import type { Config } from "../../../mod/config/config.ts";

function config(yaml: string): Config {
  const r = parseConfigText(yaml);
  if (r.kind !== "ok") throw new Error(JSON.stringify(r.problems));
  return r.config;
}

Deno.test("missingProductionKeys() names each missing key of the production profile", () => {
  assertEquals(
    missingProductionKeys(config("storage:\n  profile: production\n")).map((p) => p.path),
    [
      "storage.production.postgresql.dsn",
      "storage.production.secrets_file",
    ],
  );
  const onlyDsn = missingProductionKeys(config(
    'storage:\n  profile: production\n  production:\n    postgresql:\n      dsn: "postgres://waf@db:5432/waf"\n',
  ));
  assertEquals(onlyDsn.map((p) => [p.path, p.code]), [
    ["storage.production.secrets_file", "ErrProductionStorageUnavailable"],
  ]);
  assertEquals(missingProductionKeys(config("storage:\n  profile: temporary\n")), []);
});

Deno.test("productionStoreOptions() gives the store's settings in client units", () => {
  const c = config(
    'storage:\n  profile: production\n  production:\n    postgresql:\n      dsn: "postgres://waf@db:5432/waf"\n      pool_size: 3\n      connect_timeout: 2s\n      statement_timeout: 1m\n      schema: waf_a\n    secrets_file: /etc/waf/deployment.key\n',
  );
  assertEquals(productionStoreOptions(c), {
    dsn: "postgres://waf@db:5432/waf",
    poolSize: 3,
    connectTimeoutMs: 2000,
    statementTimeoutMs: 60_000,
    schema: "waf_a",
  });
  const defaults = productionStoreOptions(config(
    'storage:\n  production:\n    postgresql:\n      dsn: "postgres://waf@db/waf"\n',
  ));
  assertEquals(
    [
      defaults?.poolSize,
      defaults?.connectTimeoutMs,
      defaults?.statementTimeoutMs,
      defaults?.schema,
    ],
    [10, 5000, 10_000, "public"],
  );
  assertEquals(productionStoreOptions(config("{}")), undefined);
});

Deno.test("redactDsn() masks the password and keeps the rest", () => {
  assertEquals(redactDsn("postgres://waf:s3cret@db:5432/waf"), "postgres://waf:***@db:5432/waf");
  assertEquals(redactDsn("postgres://waf@db:5432/waf"), "postgres://waf@db:5432/waf");
  const query = redactDsn("postgresql://db/waf?user=waf&password=s3cret");
  ok(!query.includes("s3cret"), query);
  const multiHost = redactDsn("postgres://waf:s3cret@db1:5432,db2:5432/waf");
  assertEquals(multiHost, "postgres://waf:***@db1:5432,db2:5432/waf");
});
