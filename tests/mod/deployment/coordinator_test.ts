/** Which remote change notices rebuild the policy or wake the task scheduler. */
import { assertEquals } from "../../_helpers/assert.ts";
import { changesPolicy, changesTasks } from "../../../mod/deployment/coordinator.ts";

Deno.test("changesPolicy() is true for sites and policy objects, and for a missed-notices null", () => {
  assertEquals(changesPolicy(["sites"]), true);
  assertEquals(changesPolicy(["audit_log", "policy_objects"]), true);
  assertEquals(changesPolicy(null), true);
});

Deno.test("changesPolicy() is false for sessions, audit, task runs and node heartbeats", () => {
  for (const table of ["admin_sessions", "audit_log", "ops_task_runs", "cluster_nodes", "users"]) {
    assertEquals(changesPolicy([table]), false, table);
  }
  assertEquals(changesPolicy([]), false);
});

Deno.test("changesTasks() is true for ops_tasks and null only", () => {
  assertEquals(changesTasks(["ops_tasks"]), true);
  assertEquals(changesTasks(null), true);
  assertEquals(changesTasks(["ops_task_runs", "sites"]), false);
});
