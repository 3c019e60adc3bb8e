/**
 * The cursor of a newest-first list (notifications, notification deliveries): `<time>.<id>` of
 * the last item on a page, read back as the point the next page starts before.
 */
import { badRequest } from "./errors.ts";

/** Where the next page starts: items older than `time`, or as old and with a smaller id. */
export interface PageCursor {
  readonly time: number;
  readonly id: string;
}

/** Reads a cursor; none given is the first page, a malformed one a 400 naming `cursor`. */
export function readCursor(cursor: string | undefined): PageCursor | undefined {
  if (!cursor) return undefined;
  const [time, id] = cursor.split(".");
  if (!time || !id || !/^\d+$/.test(time)) {
    throw badRequest('Invalid field "cursor": not a cursor', "cursor");
  }
  return { time: Number(time), id };
}

/**
 * One page of `rows` (read with `limit + 1`, so a further page shows) and the cursor of the
 * next page, from the time and id `at` gives of its last row; null on the last page.
 */
export function pageOf<R>(
  rows: readonly R[],
  limit: number,
  at: (row: R) => PageCursor,
): { page: R[]; next_cursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  if (rows.length <= limit || last === undefined) return { page, next_cursor: null };
  const c = at(last);
  return { page, next_cursor: `${c.time}.${c.id}` };
}
