/**
 * Path segments that are identifiers by their shape: numbers, UUIDs, long hex strings and long
 * opaque tokens become `{id}` in an endpoint template (`/users/123/orders/9f1c…` ->
 * `/users/{id}/orders/{id}`). Segments that are parameters only by their variety (user names,
 * slugs) are found by the inventory, which counts distinct values per position.
 */

const NUMBER = /^[0-9]+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEX = /^[0-9a-f]{8,}$/i;
/** A long token of letters and digits with at least one digit (base64url ids, ULIDs, hashes). */
const OPAQUE = /^(?=.*[0-9])[A-Za-z0-9_-]{16,}$/;

/** True when a segment is an identifier by its shape alone. */
export function isIdSegment(segment: string): boolean {
  return NUMBER.test(segment) || UUID.test(segment) ||
    (HEX.test(segment) && /[0-9]/.test(segment)) ||
    OPAQUE.test(segment);
}

/** The segment a parameter stands in for, in a template. */
export const ID = "{id}";
export const PARAM = "{param}";

export const isPlaceholder = (segment: string): boolean => segment === ID || segment === PARAM;
