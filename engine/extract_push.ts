/**
 * The one place inputs are appended, so the cap on inputs per request holds everywhere.
 */
import type { Input, InputSource } from "./types.ts";

/**
 * Inputs per request. A section that holds more values (a query string with thousands of
 * parameters, a JSON body with thousands of strings) is also judged whole as text, so values
 * past the cap are never invisible.
 */
export const MAX_INPUTS = 4096;
/** Query parameters judged one by one; past this the whole query string is judged as text. */
export const MAX_QUERY_INPUTS = 1024;

/**
 * Appends one non-empty value unless the request already has {@link MAX_INPUTS} inputs.
 *
 * @returns false when the input list is full
 */
export function push(out: Input[], source: InputSource, name: string, value: string): boolean {
  if (out.length >= MAX_INPUTS) return false;
  if (value.length > 0) out.push({ source, name, value });
  return true;
}

/** A finding's location: `source:name`, or `path[2]` / `graphql.query` for such names. */
export function locationOf(input: Input): string {
  if (input.name.length === 0) return input.source;
  const c = input.name.charCodeAt(0);
  return c === 91 || c === 46 ? input.source + input.name : `${input.source}:${input.name}`;
}
