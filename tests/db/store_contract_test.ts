/**
 * One contract suite, two engines: the store's tests (repositories and the services built on
 * them, through tests/_helpers/store.ts) run here a second time with `WAF_TEST_STORE=postgresql`,
 * each test on a schema of its own on the machine's PostgreSQL. The SQLite run is the suite's
 * ordinary one. A file joins this list when its cases are about stored behaviour; the access
 * log's tests stay out (each controller's access log is always a local SQLite file).
 */
import { ok } from "../_helpers/assert.ts";
import { hasPostgres, ignoreWithout } from "../_helpers/services.ts";

const CONTRACT = [
  "tests/db/users_repo_test.ts",
  "tests/db/totp_repo_test.ts",
  "tests/db/policy_objects_repo_test.ts",
  "tests/db/policy_object_changes_test.ts",
  "tests/mod/identity/setup_token_test.ts",
  "tests/mod/identity/api_tokens_test.ts",
  "tests/mod/identity/token_cleanup_test.ts",
  "tests/mod/identity/refusal_audit_test.ts",
  "tests/mod/identity/shared_lockout_test.ts",
  "tests/mod/identity/shared_captcha_test.ts",
  "tests/mod/data_plane/shared_acme_challenges_test.ts",
  "tests/mod/cluster/cluster_ca_test.ts",
  "tests/mod/ops/scheduler_test.ts",
  "tests/mod/data_plane/sites_test.ts",
  "tests/mod/apisec/inventory_test.ts",
  "tests/mod/apisec/shared_inventory_test.ts",
  "tests/app/protection_ip_list_test.ts",
];

const available = await hasPostgres();

Deno.test({
  name: "the store's tests pass on PostgreSQL as on SQLite",
  ignore: ignoreWithout(available),
  async fn() {
    const root = new URL("../../", import.meta.url);
    const out = await new Deno.Command(Deno.execPath(), {
      // Two files at a time: each case mostly waits on PostgreSQL (its own schema made and
      // migrated, then dropped), so two keep the database and this process busier.
      args: ["test", "-A", "--no-check", "--parallel", ...CONTRACT],
      cwd: root,
      env: { WAF_TEST_STORE: "postgresql", NO_COLOR: "1", DENO_JOBS: "2" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    const summary = /ok \| (\d+) passed|FAILED \| (\d+) passed \| (\d+) failed/.exec(text);
    ok(out.success, `the PostgreSQL run failed:\n${text.slice(-6000)}`);
    ok(summary && Number(summary[1]) > 50, `too few cases ran:\n${text.slice(-2000)}`);
  },
});
