import { assertEquals, ok } from "../_helpers/assert.ts";
import { record } from "../_helpers/records.ts";
import { startTestServer } from "../_helpers/server.ts";
import { postgresDsn } from "../_helpers/services.ts";
import { siteInput, SYSTEM } from "../_helpers/sites.ts";
import { startUpstream } from "../_helpers/upstream.ts";
import { createPgSink } from "../../db/pg_sink.ts";
import { toRow } from "../../mod/data_plane/access_record.ts";
import { createMemoryLogger } from "../../mod/core/logger.ts";
import { createPgShipper } from "../../mod/data_plane/pg_shipper.ts";
import { randomHex, systemRandom } from "../../mod/core/random.ts";

const dsn = await postgresDsn();

async function waitFor(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

Deno.test({
  name: "the PostgreSQL sink creates its table and ships batches into it",
  ignore: dsn === undefined,
  async fn() {
    const table = `waf_access_logs_test_${randomHex(systemRandom, 4)}`;
    const sink = createPgSink({ dsn: dsn!, poolSize: 2, table });
    const check = createPgSink({ dsn: dsn!, poolSize: 1, table });
    const shipper = createPgShipper(sink, { batchSize: 2 }, createMemoryLogger());
    try {
      const rows = [record(), record({ action: "block", status: 403 }), record()].map(toRow);
      shipper.offer(rows);
      await waitFor(() => shipper.stats()["shipped_rows"] === 3, "three shipped rows");
      assertEquals(shipper.stats()["shipped_batches"], 2);
      assertEquals(shipper.stats()["up"], true);
      // The same batch again is ignored by trace id, not duplicated.
      shipper.offer(rows);
      await waitFor(() => shipper.stats()["shipped_rows"] === 6, "the repeated batch");
      assertEquals(await check.count(), 3);
    } finally {
      await shipper.close();
      await check.drop();
      await check.close();
    }
  },
});

Deno.test("a PostgreSQL sink that is down buffers a bounded number of batches and counts drops", async () => {
  // Port 9 on loopback refuses connections at once.
  const sink = createPgSink({
    dsn: "postgres://nobody@127.0.0.1:9/none",
    poolSize: 1,
    connectTimeoutSeconds: 1,
  });
  const logger = createMemoryLogger();
  const shipper = createPgShipper(
    sink,
    { batchSize: 1, maxBatches: 3, minBackoffMs: 60_000 },
    logger,
  );
  try {
    // offer() is synchronous: it only appends to the buffer and never waits for the database.
    shipper.offer([record(), record(), record(), record(), record()].map(toRow));
    await waitFor(() => (shipper.stats()["failures"] as number) >= 1, "a failed send");
    const stats = shipper.stats();
    assertEquals(stats["buffered_batches"], 3);
    assertEquals(stats["dropped_batches"], 2);
    assertEquals(stats["up"], false);
    assertEquals(
      logger.lines.some((l) => l.includes("PostgreSQL access-log sink unavailable")),
      true,
    );
  } finally {
    await shipper.close();
  }
});

Deno.test({
  name: "a server with storage.postgresql ships its access-log records to PostgreSQL",
  ignore: dsn === undefined,
  async fn() {
    await using up = startUpstream();
    await using s = await startTestServer({
      config: { storage: { postgresql: { dsn: dsn!, pool_size: 1, batch_size: 10 } } },
    });
    const check = createPgSink({ dsn: dsn!, poolSize: 1 });
    try {
      s.dataPlane.sites.create(siteInput({ hosts: ["127.0.0.1"], upstreams: [up.url] }), SYSTEM);
      const r = await fetch(`${s.dataUrl}/?id=1%27%20or%201=1--`);
      assertEquals(r.status, 403);
      await r.body?.cancel();
      await s.dataPlane.accessLog.flush();
      const stats = () => s.dataPlane.accessLog.stats().sinks[0]!;
      await waitFor(() => (stats()["shipped_rows"] as number) >= 1, "a shipped row");
      assertEquals(stats()["up"], true);
      ok(await check.count() >= 1);
    } finally {
      await check.close();
    }
  },
});
