import { z } from "zod";
import { assertEquals, assertMatch, ok } from "../../_helpers/assert.ts";
import { AppError } from "../../../mod/core/errors.ts";
import { createMemoryLogger } from "../../../mod/core/logger.ts";
import { systemRandom } from "../../../mod/core/random.ts";
import { createManagementApp, publicOnlyGuard } from "../../../routes/api/management.ts";
import { PUBLIC, type RouteDef } from "../../../routes/api/route.ts";
import { readJson } from "../../../routes/api/validate.ts";

const schema = z.strictObject({ name: z.string().min(1), port: z.number().int() });

function app() {
  const logger = createMemoryLogger();
  const routes: RouteDef[] = [
    {
      method: "POST",
      path: "/api/echo",
      access: PUBLIC,
      handler: async (c) => c.json(await readJson(c, schema)),
    },
    {
      method: "GET",
      path: "/api/boom",
      access: PUBLIC,
      handler: () => {
        throw new Error("database exploded at /secret/path");
      },
    },
    {
      method: "GET",
      path: "/api/teapot",
      access: PUBLIC,
      handler: () => {
        throw new AppError(418, "TEAPOT", "Short and stout");
      },
    },
    {
      method: "GET",
      path: "/api/private",
      access: { kind: "permission", permission: "read:sites" },
      handler: (c) => c.json({}),
    },
  ];
  return {
    logger,
    app: createManagementApp({ logger, random: systemRandom, routes, guard: publicOnlyGuard }),
  };
}

Deno.test("malformed JSON answers 400 BAD_REQUEST", async () => {
  const { app: a } = app();
  const r = await a.request("/api/echo", { method: "POST", body: "{not json" });
  assertEquals(r.status, 400);
  const { error } = await r.json();
  assertEquals(error.code, "BAD_REQUEST");
  assertMatch(error.message, /Malformed JSON/);
});

Deno.test("malformed JSON answers 400 with the line and column where it goes wrong", async () => {
  const { app: a } = app();
  const r = await a.request("/api/echo", {
    method: "POST",
    body: '{\n  "name": "shop",\n  "port": x\n}',
  });
  assertEquals(r.status, 400);
  const { error } = await r.json();
  assertEquals(error.code, "BAD_REQUEST");
  assertEquals(
    error.message,
    'Malformed JSON body at line 3, column 11: unexpected "x", expected a value',
  );
  assertEquals([error.field, error.line, error.column], ["(body)", 3, 11]);
  const cut = await a.request("/api/echo", { method: "POST", body: '{"name": "shop", "port": 8' });
  const { error: end } = await cut.json();
  assertEquals(cut.status, 400);
  assertMatch(end.message, /^Malformed JSON body at line 1, column 27: unexpected end of input/);
  assertEquals([end.line, end.column], [1, 27]);
});

Deno.test("an invalid field answers 400 naming the field", async () => {
  const { app: a } = app();
  const r = await a.request("/api/echo", {
    method: "POST",
    body: JSON.stringify({ name: "x", port: "80" }),
  });
  assertEquals(r.status, 400);
  const { error } = await r.json();
  assertEquals(error.field, "port");
  assertMatch(error.message, /"port"/);
  const extra = await a.request("/api/echo", {
    method: "POST",
    body: JSON.stringify({ name: "x", port: 1, admin: true }),
  });
  assertEquals((await extra.json()).error.field, "admin");
});

Deno.test("an unexpected error is a generic 500 with ids and the stack only in the log", async () => {
  const { app: a, logger } = app();
  const r = await a.request("/api/boom");
  assertEquals(r.status, 500);
  const text = await r.text();
  ok(!text.includes("exploded") && !text.includes("/secret/path") && !text.includes("at "));
  const { error } = JSON.parse(text);
  assertEquals(error.code, "INTERNAL");
  const line = logger.lines.find((l) => l.includes(error.event_id));
  ok(line, "the log names the event id");
  ok(line!.includes("exploded"), "the log has the cause");
});

Deno.test("an AppError keeps its status and code", async () => {
  const { app: a } = app();
  const r = await a.request("/api/teapot");
  assertEquals(r.status, 418);
  assertEquals((await r.json()).error.code, "TEAPOT");
});

Deno.test("a guarded route without identity answers 401", async () => {
  const { app: a } = app();
  const r = await a.request("/api/private");
  assertEquals(r.status, 401);
  assertEquals((await r.json()).error.code, "UNAUTHORIZED");
});

Deno.test("a body over the limit answers 413 with the error object", async () => {
  const { app: a } = app();
  const r = await a.request("/api/echo", { method: "POST", body: "x".repeat(2 * 1024 * 1024) });
  assertEquals(r.status, 413);
  assertEquals((await r.json()).error.code, "PAYLOAD_TOO_LARGE");
});
