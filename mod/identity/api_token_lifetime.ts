/**
 * How long a new management API token lives: one of a time to live, a number of days or an
 * expiry time (by default 90 days), never more than a year.
 */
import { AppError } from "../core/errors.ts";

const DAY = 86_400_000;
export const DEFAULT_LIFETIME_DAYS = 90;
export const MAX_LIFETIME_DAYS = 365;

/** The lifetime fields of a token request; at most one of them is given. */
export interface TokenLifetime {
  /** The lifetime as a time to live (the request's `ttl`, already in milliseconds). */
  readonly ttl_ms?: number;
  readonly expires_in_days?: number;
  readonly expires_at?: string;
}

/** The ways to give a token's lifetime (input key, request field); at most one per request. */
const LIFETIME_FIELDS = [
  ["ttl_ms", "ttl"],
  ["expires_in_days", "expires_in_days"],
  ["expires_at", "expires_at"],
] as const;

const tooLong = (field: string) =>
  new AppError(
    400,
    "API_TOKEN_LIFETIME_TOO_LONG",
    `Invalid field "${field}": a token lives at most ${MAX_LIFETIME_DAYS} days`,
    { details: { field } },
  );

/** When a token asked for at `now` with `input` expires; 400 when the request is not valid. */
export function tokenExpiry(input: TokenLifetime, now: number): number {
  const given = LIFETIME_FIELDS.filter(([key]) => input[key] !== undefined).map(([, f]) => f);
  if (given.length > 1) {
    throw new AppError(
      400,
      "BAD_REQUEST",
      `Invalid field "${given[1]}": give one of ${
        LIFETIME_FIELDS.map(([, f]) => f).join(", ")
      }, not several`,
      { details: { field: given[1] } },
    );
  }
  if (input.ttl_ms !== undefined) {
    if (input.ttl_ms > MAX_LIFETIME_DAYS * DAY) throw tooLong("ttl");
    return now + input.ttl_ms;
  }
  if (input.expires_at !== undefined) {
    const at = Date.parse(input.expires_at);
    if (at <= now) {
      throw new AppError(
        400,
        "BAD_REQUEST",
        'Invalid field "expires_at": must be in the future',
        { details: { field: "expires_at" } },
      );
    }
    if (at - now > MAX_LIFETIME_DAYS * DAY) throw tooLong("expires_at");
    return at;
  }
  const days = input.expires_in_days ?? DEFAULT_LIFETIME_DAYS;
  if (days > MAX_LIFETIME_DAYS) throw tooLong("expires_in_days");
  return now + days * DAY;
}
