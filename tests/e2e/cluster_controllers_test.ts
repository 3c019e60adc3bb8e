/**
 * Two controllers on one production store are one cluster: they serve the same CA (each with its
 * own listener certificate), a join token made on one enrols through the other, and a node that
 * joined through controller A is accepted when it reports to controller B (its certificate was
 * signed by the deployment's CA and its registration is in the shared store). Login failures
 * spread over both controllers are counted together.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { eventually, nodeHealth, startNode } from "../_helpers/cluster.ts";
import { ADMIN, callJson, completeSetup, login } from "../_helpers/identity.ts";
import { startTestServer } from "../_helpers/server.ts";
import { hasPostgres, ignoreWithout, postgresDsn } from "../_helpers/services.ts";
import { tempDir } from "../_helpers/temp.ts";
import { testSchemaName } from "../_helpers/store.ts";
import { openPgStore } from "../../db/pg/pg_database.ts";
import { loadNodeIdentity } from "../../mod/cluster/node_identity.ts";
import { parseJoinToken } from "../../mod/cluster/join_tokens.ts";
import { fetchPinnedCa } from "../../mod/cluster/controller_client.ts";

const available = await hasPostgres();

function production(schema: string, secretsFile: string): Record<string, unknown> {
  return {
    storage: {
      profile: "production",
      production: {
        postgresql: { dsn: postgresDsn(available), schema },
        secrets_file: secretsFile,
      },
    },
    cluster: { listen: "127.0.0.1:0" },
  };
}

function dropSchema(schema: string): void {
  const db = openPgStore({
    dsn: postgresDsn(available),
    schema,
    connectTimeoutMs: 5_000,
    statementTimeoutMs: 10_000,
    controllerId: crypto.randomUUID(),
    now: Date.now(),
  });
  try {
    db.exec(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    db.close();
  }
}

Deno.test({
  name:
    "a node joined through controller A with B's token reports to B, and login failures on A and B lock together (needs postgresql)",
  ignore: ignoreWithout(available),
  async fn() {
    const schema = testSchemaName();
    await using dir = await tempDir();
    try {
      await using a = await startTestServer({ config: production(schema, `${dir}/a.key`) });
      await completeSetup(a);
      await Deno.copyFile(`${dir}/a.key`, `${dir}/b.key`);
      await using b = await startTestServer({ config: production(schema, `${dir}/b.key`) });
      const adminB = await login(b, ADMIN.username, ADMIN.password);

      const created = await callJson(b, "POST", "/api/cluster/join-tokens", {
        session: adminB,
        body: { note: "edge" },
      });
      assertEquals(created.status, 201, JSON.stringify(created.body));
      const token = created.body.token as string;
      const pin = parseJoinToken(token)!.caFingerprint;
      // Both listeners present the deployment's CA, each its own server certificate.
      const caA = await fetchPinnedCa(a.clusterUrl!, pin);
      const caB = await fetchPinnedCa(b.clusterUrl!, pin);
      assertEquals(caA, caB);
      assertEquals(a.cluster.ca!.fingerprint, b.cluster.ca!.fingerprint);
      ok(a.cluster.ca!.server.cert !== b.cluster.ca!.server.cert);

      const nodeDir = `${dir}/node`;
      await Deno.mkdir(nodeDir);
      {
        await using node = await startNode(a.clusterUrl!, { token, name: "edge", dir: nodeDir });
        await eventually("the node reports to A", async () => {
          const h = await nodeHealth(node);
          return h.link === "connected" ? h : undefined;
        });
      }
      // The node now reports to B (a load balancer's choice, here its recorded controller).
      const id = (await loadNodeIdentity(nodeDir))!;
      const meta = JSON.parse(await Deno.readTextFile(`${nodeDir}/cluster/node.json`));
      await Deno.writeTextFile(
        `${nodeDir}/cluster/node.json`,
        JSON.stringify({ ...meta, controller_url: b.clusterUrl }),
      );
      await using node = await startNode(b.clusterUrl!, { name: "edge", dir: nodeDir });
      const health = await eventually("the node reports to B", async () => {
        const h = await nodeHealth(node);
        return h.link === "connected" ? h : undefined;
      });
      assertEquals([health.node_id, health.controller], [id.nodeId, b.clusterUrl]);
      const listed = await callJson(a, "GET", `/api/cluster/nodes/${id.nodeId}`, {
        session: await login(a, ADMIN.username, ADMIN.password),
      });
      assertEquals(listed.status, 200, JSON.stringify(listed.body));
      const item = listed.body.item as { state: string; last_heartbeat_at: string | null };
      assertEquals(item.state, "online");
      // The last heartbeat was B's (each controller's clock is a test's fake one, A's earlier).
      assertEquals(item.last_heartbeat_at, new Date(b.clock.now()).toISOString());
      ok(a.clock.now() < b.clock.now());
      const refused = b.db.prepare(
        "SELECT COUNT(*) AS n FROM audit_log WHERE action = 'cluster.node.authenticate'",
      ).get() as { n: number };
      assertEquals(Number(refused.n), 0, "no node call was refused");

      // Login failures spread over both controllers count once: five lock the pair on both.
      a.db.prepare(
        "INSERT INTO settings (key, value, updated_at) VALUES ('auth.captcha_policy', ?, 0)",
      ).run(JSON.stringify({ mode: "never", failures: 3, difficulty: 8 }));
      const attempt = async (server: typeof a, password: string) => {
        const ctx = { clientIp: "203.0.113.7", traceId: "t".repeat(32), userAgent: null };
        try {
          await server.identity.login.login({ username: ADMIN.username, password }, ctx);
          return "200";
        } catch (err) {
          return String((err as { code?: string }).code);
        }
      };
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await attempt(i % 2 ? b : a, "Wrong-Pass-91"));
      assertEquals(answers, Array(5).fill("UNAUTHORIZED"));
      assertEquals(await attempt(a, ADMIN.password), "TOO_MANY_ATTEMPTS");
      assertEquals(await attempt(b, ADMIN.password), "TOO_MANY_ATTEMPTS");
    } finally {
      dropSchema(schema);
    }
  },
});
