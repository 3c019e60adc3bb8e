/**
 * Notification channels: create, read, update, delete. The secret part of a channel (webhook URL
 * with its key, signing secret, SMTP password) is sealed with the data directory's key, bound to
 * the channel's id, and never returned: reads show masked hints (`https://hooks.slack.com/…`,
 * `secret_set: true`). An update that omits a secret keeps the stored one.
 */
import type { ChannelRow, NotifyRepo } from "../../db/notify_repo.ts";
import type { Clock } from "../core/clock.ts";
import { AppError, badRequest } from "../core/errors.ts";
import { type Random, randomHex } from "../core/random.ts";
import type { SecretBox } from "../core/secret_box.ts";
import {
  type ChannelInput,
  type ChannelPatch,
  type ChannelType,
  publicSettings,
  type Secrets,
  secretSettings,
} from "./channel_schema.ts";

export interface ChannelView {
  readonly id: string;
  readonly name: string;
  readonly type: ChannelType;
  readonly enabled: boolean;
  readonly events: string[];
  /** Settings that may be shown, plus masked hints of the secrets (`url`, `*_set` flags). */
  readonly settings: Record<string, unknown>;
  readonly created_at: string;
  readonly updated_at: string;
}

/** A channel as the dispatcher uses it, secrets opened. */
export interface OpenChannel {
  readonly id: string;
  readonly type: ChannelType;
  readonly settings: Record<string, unknown>;
  readonly secrets: Secrets;
}

const owner = (id: string) => `notify.channel:${id}`;

/** `https://hooks.slack.com/…`: the origin only, since paths and queries carry the keys. */
export function maskUrl(url: string): string {
  try {
    return `${new URL(url).origin}/…`;
  } catch {
    return "…";
  }
}

function hints(secrets: Secrets): Record<string, unknown> {
  const h: Record<string, unknown> = {};
  if (secrets.url !== undefined) h.url = maskUrl(secrets.url);
  if ("secret" in secrets || secrets.url !== undefined) h.secret_set = secrets.secret !== undefined;
  if (secrets.password !== undefined) h.password_set = true;
  return h;
}

function invalid(field: string, message: string): AppError {
  return badRequest(`Invalid field "${field}": ${message}`, field);
}

/** Splits `settings` into what may be shown and the secrets, validating both for `type`. */
function split(type: ChannelType, settings: Record<string, unknown>, stored?: Secrets) {
  const secretKeys = Object.keys(secretSettings[type].shape);
  const pub: Record<string, unknown> = {};
  const sec: Record<string, unknown> = { ...stored };
  for (const [k, v] of Object.entries(settings)) {
    if (secretKeys.includes(k)) sec[k] = v;
    else pub[k] = v;
  }
  const p = publicSettings[type].safeParse(pub);
  if (!p.success) {
    const issue = p.error.issues[0]!;
    throw invalid(["settings", ...issue.path.map(String)].join("."), issue.message);
  }
  const s = secretSettings[type].safeParse(sec);
  if (!s.success) {
    const issue = s.error.issues[0]!;
    const path = issue.path.length > 0 ? issue.path.map(String) : [String(secretKeys[0])];
    throw invalid(["settings", ...path].join("."), issue.message);
  }
  return { pub: p.data as Record<string, unknown>, secrets: s.data as Secrets };
}

export function createChannels(
  deps: { repo: NotifyRepo; box: SecretBox; clock: Clock; random: Random },
) {
  const { repo, box } = deps;

  function view(row: ChannelRow): ChannelView {
    return {
      id: row.id,
      name: row.name,
      type: row.type as ChannelType,
      enabled: row.enabled === 1,
      events: JSON.parse(row.events),
      settings: { ...JSON.parse(row.config), ...JSON.parse(row.secret_hint ?? "{}") },
      created_at: new Date(row.created_at).toISOString(),
      updated_at: new Date(row.updated_at).toISOString(),
    };
  }

  function find(id: string): ChannelRow {
    const row = repo.getChannel(id);
    if (!row) throw new AppError(404, "NOT_FOUND", `No notification channel with id "${id}"`);
    return row;
  }

  async function openSecrets(row: ChannelRow): Promise<Secrets> {
    if (row.secret_sealed === null) return {};
    const plain = await box.open(row.secret_sealed, owner(row.id));
    return JSON.parse(new TextDecoder().decode(plain)) as Secrets;
  }

  const seal = (id: string, secrets: Secrets) =>
    box.seal(new TextEncoder().encode(JSON.stringify(secrets)), owner(id));

  return {
    list: (): ChannelView[] => repo.listChannels().map(view),
    get: (id: string): ChannelView => view(find(id)),
    /** Validates and seals; `commit` stores the row (the caller's transaction and audit). */
    async prepareCreate(input: ChannelInput): Promise<{ row: ChannelRow; view: ChannelView }> {
      const id = `nch_${randomHex(deps.random, 8)}`;
      const { pub, secrets } = split(input.type, input.settings);
      const now = deps.clock.now();
      const row: ChannelRow = {
        id,
        name: input.name,
        type: input.type,
        enabled: input.enabled ? 1 : 0,
        events: JSON.stringify([...new Set(input.events)]),
        config: JSON.stringify(pub),
        secret_sealed: Object.keys(secrets).length > 0 ? await seal(id, secrets) : null,
        secret_hint: JSON.stringify(hints(secrets)),
        created_at: now,
        updated_at: now,
      };
      return { row, view: view(row) };
    },
    insert(row: ChannelRow): void {
      repo.insertChannel(row);
    },
    async prepareUpdate(
      id: string,
      patch: ChannelPatch,
    ): Promise<{ row: ChannelRow; view: ChannelView }> {
      const before = find(id);
      const type = before.type as ChannelType;
      const stored = await openSecrets(before);
      const settings = patch.settings === undefined
        ? { ...JSON.parse(before.config) }
        : patch.settings;
      const { pub, secrets } = split(type, settings, stored);
      const row: ChannelRow = {
        ...before,
        name: patch.name ?? before.name,
        enabled: patch.enabled === undefined ? before.enabled : patch.enabled ? 1 : 0,
        events: patch.events === undefined
          ? before.events
          : JSON.stringify([...new Set(patch.events)]),
        config: JSON.stringify(pub),
        secret_sealed: Object.keys(secrets).length > 0 ? await seal(id, secrets) : null,
        secret_hint: JSON.stringify(hints(secrets)),
        updated_at: deps.clock.now(),
      };
      return { row, view: view(row) };
    },
    update(row: ChannelRow): void {
      repo.updateChannel(row);
    },
    remove(id: string): void {
      find(id);
      repo.deleteChannel(id);
    },
    /** Enabled channels subscribed to `event`. */
    subscribed(event: string): ChannelRow[] {
      return repo.listChannels().filter((c) =>
        c.enabled === 1 && (JSON.parse(c.events) as string[]).includes(event)
      );
    },
    /** The channel with its secrets opened (the dispatcher, at send time). */
    async open(id: string): Promise<OpenChannel | undefined> {
      const row = repo.getChannel(id);
      if (!row) return undefined;
      return {
        id: row.id,
        type: row.type as ChannelType,
        settings: JSON.parse(row.config),
        secrets: await openSecrets(row),
      };
    },
    find,
  };
}

export type Channels = ReturnType<typeof createChannels>;
