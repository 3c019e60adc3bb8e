/**
 * The runtime log on a real server: blocks, refused logins, upstream failures and policy swaps
 * appear at info, and a flood of any of them writes a bounded number of lines.
 */
import { assertEquals, ok } from "../_helpers/assert.ts";
import { call } from "../_helpers/identity.ts";
import { addSite, hit } from "../_helpers/protection.ts";
import { startTestServer } from "../_helpers/server.ts";
import { startUpstream } from "../_helpers/upstream.ts";

const lines = (logs: string[], text: string) => logs.filter((l) => l.includes(`INFO  ${text}`));

Deno.test("blocks, refused logins, upstream failures and policy swaps reach the runtime log at info, rate-limited", async () => {
  await using up = startUpstream();
  await using s = await startTestServer();
  addSite(s, up.url);
  ok(lines(s.logs, "policy swapped").some((l) => l.includes("sites=1")), s.logs.join("\n"));
  const blocked = await hit(s, "/search?id=1%27%20or%201=1--", { ip: "198.51.100.7" });
  assertEquals(blocked.status, 403);
  const block = lines(s.logs, "request blocked");
  assertEquals(block.length, 1);
  ok(block[0]!.includes(`trace_id=${blocked.traceId}`) && block[0]!.includes("class=sqli"));
  ok(block[0]!.includes("client_ip=198.51.100.7"), block[0]);

  const refused = await call(s, "POST", "/api/auth/login", {
    body: { username: "admin", password: "Wrong-Pass-11x" },
  });
  await refused.body?.cancel();
  const login = lines(s.logs, "auth.login refused");
  assertEquals(login.length, 1);
  ok(login[0]!.includes("username=admin") && login[0]!.includes("reason=unknown_user"), login[0]);
  ok(!login[0]!.includes("Wrong-Pass-11x"), "never the password");

  addSite(s, "http://127.0.0.1:1", { name: "dead", hosts: ["dead.test"] });
  const failed = await hit(s, "/", { host: "dead.test" });
  assertEquals(failed.status, 502);
  ok(
    lines(s.logs, "upstream failed").some((l) =>
      l.includes("result=unreachable") && l.includes("cause=upstream.refused") &&
      l.includes(`trace_id=${failed.traceId}`)
    ),
  );

  // A flood of 200 blocks writes the burst of 20 lines, not 200.
  for (let i = 0; i < 200; i++) {
    await hit(s, "/search?id=1%27%20or%201=1--", { ip: "198.51.100.8" });
  }
  const after = lines(s.logs, "request blocked").length;
  ok(after <= 21, `${after} block lines`);
});
