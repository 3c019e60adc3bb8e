/**
 * In-process tests hash passwords with 1,000 PBKDF2 iterations instead of the product's 600,000
 * (a quarter of a second of a core per login, setup or password change): imported by the helpers
 * that compose the app or run commands in-process. What the cost is in the product is asserted
 * by tests/mod/identity/password_hash_test.ts, which does not import this; processes the tests
 * spawn (`waf serve`) always use the product's cost.
 */
import { setHashIterationsForTests } from "../../mod/identity/password_hash.ts";

export const TEST_HASH_ITERATIONS = 1_000;

setHashIterationsForTests(TEST_HASH_ITERATIONS);
