/** Assertions for tests: `node:assert/strict` re-exported under familiar names. */
import assert from "node:assert/strict";

export const assertEquals: <T>(
  actual: unknown,
  expected: T,
  message?: string,
) => asserts actual is T = assert.deepStrictEqual;
export const ok: (value: unknown, message?: string) => asserts value = assert.ok;
export const assertMatch: (value: string, re: RegExp, message?: string) => void = assert.match;
export const assertRejects: typeof assert.rejects = assert.rejects;
export const assertThrows: typeof assert.throws = assert.throws;
export const notEqual: typeof assert.notDeepStrictEqual = assert.notDeepStrictEqual;
