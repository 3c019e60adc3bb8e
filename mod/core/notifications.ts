/**
 * Administrator notifications: stored in the store and listed for admins (`/api/notifications`).
 * Each new one is also handed to `created` (the notification channels' dispatcher and the
 * realtime feed), after it is stored. A notification carries its reason as data: its `kind` and
 * `params`, from which the console writes the text in its own language (falling back to the
 * stored English `title` and `body`, which channels deliver), and the console page it is about
 * (`link`).
 */
import type { NotificationReadRow, NotificationsRepo } from "../../db/notifications_repo.ts";
import type { Clock } from "./clock.ts";
import { AppError } from "./errors.ts";
import { pageOf, readCursor } from "./page_cursor.ts";
import { type Random, randomHex } from "./random.ts";

/** The only audience of the inbox; notification channels fan out from it (`mod/notify/`). */
export const ADMINS = "admins";

export interface NewNotification {
  readonly level: "info" | "warning" | "critical";
  readonly kind: string;
  /** The English text (channels, and the console for a kind it has no text of). */
  readonly title: string;
  readonly body: string;
  /**
   * The facts the text is made of, stored with it (the console's catalogues fill
   * `note.<kind>[.<variant>].title|body` from them); default: the plain values of `data`.
   */
  readonly params?: Readonly<Record<string, NoteParam>>;
  /** The console page the notification is about, e.g. `/console/alap/<id>`. */
  readonly link?: string;
  /** Structured facts for notification channels and the realtime feed (not kept in the inbox). */
  readonly data?: Readonly<Record<string, unknown>>;
}

/** A notification parameter: a plain value. */
export type NoteParam = string | number | boolean | null;

/** Raises an administrator notification (the inbox, the channels, the realtime feed). */
export type Notify = (n: NewNotification) => string;

export interface NotificationView {
  readonly id: string;
  readonly time: string;
  readonly level: string;
  readonly kind: string;
  readonly title: string;
  readonly body: string;
  readonly params: Readonly<Record<string, NoteParam>>;
  readonly link: string | null;
  readonly read: boolean;
  readonly read_at: string | null;
}

/** The plain (string, number, boolean, null) values of `data`: what a kind without params stores. */
function plainValues(
  data: Readonly<Record<string, unknown>> | undefined,
): Record<string, NoteParam> {
  const out: Record<string, NoteParam> = {};
  for (const [k, v] of Object.entries(data ?? {})) {
    if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") {
      out[k] = v;
    }
  }
  return out;
}

function view(row: NotificationReadRow): NotificationView {
  return {
    id: row.id,
    time: new Date(row.time).toISOString(),
    level: row.level,
    kind: row.kind,
    title: row.title,
    body: row.body,
    params: row.params === null ? {} : JSON.parse(row.params),
    link: row.link,
    read: row.read_at !== null,
    read_at: row.read_at === null ? null : new Date(row.read_at).toISOString(),
  };
}

export function createNotifications(
  deps: {
    repo: NotificationsRepo;
    clock: Clock;
    random: Random;
    /** Told about each stored notification (channels, realtime); must not throw. */
    created?: (view: NotificationView, data: Readonly<Record<string, unknown>>) => void;
  },
) {
  return {
    notifyAdmins(n: NewNotification): string {
      const id = randomHex(deps.random, 8);
      const time = deps.clock.now();
      const row = {
        id,
        time,
        audience: ADMINS,
        level: n.level,
        kind: n.kind,
        title: n.title,
        body: n.body,
        params: JSON.stringify(n.params ?? plainValues(n.data)),
        link: n.link ?? null,
      };
      deps.repo.insert(row);
      deps.created?.(view({ ...row, read_at: null }), n.data ?? n.params ?? {});
      return id;
    },
    /** `reader` (e.g. `user:<id>`) sees its own read state: each reader has its own inbox. */
    list(
      reader: string,
      options: { unread: boolean; cursor?: string; limit: number },
    ): { items: NotificationView[]; next_cursor: string | null } {
      const rows = deps.repo.list(ADMINS, reader, {
        unread: options.unread,
        before: readCursor(options.cursor),
        limit: options.limit + 1,
      });
      const { page, next_cursor } = pageOf(rows, options.limit, (r) => r);
      return { items: page.map(view), next_cursor };
    },
    /** Marks `id` read in `reader`'s inbox only. */
    markRead(id: string, reader: string): NotificationView {
      const row = deps.repo.get(id, reader);
      if (!row || row.audience !== ADMINS) {
        throw new AppError(404, "NOT_FOUND", `No notification with id "${id}"`);
      }
      deps.repo.markRead(id, reader, deps.clock.now());
      return view(deps.repo.get(id, reader)!);
    },
  };
}

export type Notifications = ReturnType<typeof createNotifications>;
