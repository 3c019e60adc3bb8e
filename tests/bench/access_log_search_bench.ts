/**
 * The attack log's free-text search at its bound: one page over `SEARCH_SCAN` (100,000) rows
 * that match nothing, so every row is read, against the same scan by a plain column filter that
 * matches nothing (the baseline), and the class filter that reads the records of blocks.
 * `deno bench -A tests/bench/access_log_search_bench.ts`; figures in docs/bench/.
 */
import { createAccessLogRepo } from "../../db/access_log_repo.ts";
import { SEARCH_SCAN } from "../../db/access_log_search.ts";
import { lineFormat } from "../../mod/access_log/lines.ts";
import { recordLines } from "../../mod/access_log/record.ts";
import { record } from "../_helpers/records.ts";
import { testStore } from "../_helpers/store.ts";

const store = await testStore();
const repo = createAccessLogRepo(store.db, lineFormat);
const agents = ["Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0", "curl/8.5.0", null];
for (let start = 0; start < SEARCH_SCAN; start += 5000) {
  const batch = Array.from({ length: 5000 }, (_, j) => {
    const i = start + j;
    const blocked = i % 10 === 0;
    return recordLines(record({
      path: `/products/${i % 500}`,
      // Every fifth query percent-encoded, as attacks and forms often are.
      query: i % 5 === 0 ? `q=red%20shoes%20${i}` : i % 2 === 0 ? `page=${i % 40}` : "",
      user_agent: agents[i % 3]!,
      client_ip: `198.51.${(i >> 8) & 255}.${i & 255}`,
      action: blocked ? "block" : "pass",
      status: blocked ? 403 : 200,
      chain: blocked
        ? [{ check: "site", result: "match", us: 3 }, { check: "ip_list", result: "block", us: 1 }]
        : [{ check: "site", result: "match", us: 3 }, { check: "engine", result: "pass", us: 40 }],
    }));
  });
  repo.insertLines(batch.join(""));
}

Deno.bench("a column filter that matches nothing (baseline)", { baseline: true }, () => {
  repo.page({ status: 599, limit: 51 });
});

Deno.bench("free text that matches nothing, over 100,000 rows", () => {
  repo.page({ search: "no such text anywhere", limit: 51 });
});

Deno.bench("the class filter that matches nothing", () => {
  repo.page({ attackClass: "custom_rule", limit: 51 });
});

globalThis.addEventListener("unload", () => store.db.close());
