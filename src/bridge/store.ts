/**
 * The reference bridge's own store (SQLite): call records with their timeline, and known devices.
 * A bridge restart loses no call record.
 */
import type Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { openDatabase, statement } from '../storage/sqlite.js';
import { migrate, type Migration, type Schema } from '../storage/migrations.js';
import type { CallState, Descriptor, HelloParams, InvokeParams, Outcome, ProgressNote } from '../protocol/messages.js';
import type { DeviceIdentity } from './auth.js';

/** Bridge-side states: the device's (§6.2) plus `submitted` (sent, no state heard back yet). */
export type BridgeCallState = CallState | 'submitted';

/** The call record of §10. */
export interface CallRecord {
  call_id: string;
  workspace_id: string;
  device_id: string;
  function: string;
  state: BridgeCallState;
  outcome?: Outcome;
  created_at: string;
  updated_at: string;
  timeline: TimelineEntry[];
  /** (1.2, §6.8) The call was ended `unknown` by the bridge, then resolved by the device's own outcome. */
  resolved_from?: ResolvedFrom;
  /** (1.2, §6.8) A device outcome that came after the bridge ended the call some other way; it changes nothing. */
  device_outcome?: Outcome;
}

/** Where a resolved call came from: the bridge's `unknown`, and when the bridge issued it. */
export interface ResolvedFrom {
  state: 'unknown';
  at: string;
}

/**
 * One state in a call record's timeline. `derived`: the device sent no note for it (a 1.1 session
 * coalesces notes, §6.2); the bridge took its time from the outcome's `accepted_at` or `started_at`.
 */
export interface StateEntry {
  state: BridgeCallState;
  at: string;
  derived?: true;
  event?: never;
}

/** The session events a timeline records while a call waits (§6.4, 1.2): they are not states. */
export type SessionEventName = 'device_offline' | 'device_online';

/** An event in a call record's timeline: the device's session dropped or came back while the call waited. */
export interface EventEntry {
  event: SessionEventName;
  at: string;
  state?: never;
  derived?: never;
}

/** A timeline entry: a state the call went through, or a session event (§6.4, §10). */
export type TimelineEntry = StateEntry | EventEntry;

/** True for a timeline entry that is a state (not a session event). */
export function isStateEntry(t: TimelineEntry): t is StateEntry {
  return t.state !== undefined;
}

/** A hello the bridge refused, as kept in its store until the device's next hello succeeds (§10, 1.2). */
export interface RefusedHello {
  type: string;
  message: string;
  at: string;
  client_version: string;
  /** The bridge's `min_client_version` when the refusal was `client_outdated`. */
  minimum?: string;
  /** The protocol version the device offered. */
  protocol_version: string;
}

/** What the bridge keeps about a call beyond the record. */
export interface StoredCall extends CallRecord {
  args_digest: string;
  params: InvokeParams;
  deadline_ms: number;
  /** True when the outcome was produced by the bridge itself (its deadline), not by the device. */
  bridge_outcome: boolean;
  /**
   * True once the bridge has written the invoke to a live session (§6.4): a call that never was can end
   * `expired/device_offline` with `side_effects: none`; one that was ends `unknown`.
   */
  sent: boolean;
  /**
   * The latest progress note the device sent for the call (clustered bridge only: the node holding the
   * session writes it so other nodes' streams can send it on; never in the public record).
   */
  progress?: ProgressNote;
}

/**
 * A known device, as the bridge keeps it in memory: without its Adapter Card (tens of kilobytes each; a
 * bridge for 10,000 devices cannot hold them all), which `adapterCard` reads from the store when asked.
 */
export interface DeviceRecord {
  device_id: string;
  workspace_id: string;
  user_id: string;
  name: string | null;
  platform: string | null;
  arch: string | null;
  client_version: string | null;
  last_seen: string | null;
  functions: Descriptor[];
  functions_revision: number;
  /** SHA-256 (hex) of the stored card's JSON text, so a reconnect with the same card writes nothing. */
  adapter_card_digest: string | null;
  /** The last session the bridge closed for a reason the device should know (e.g. `device_limits_exceeded`). */
  last_closed?: ClosedSession | null;
}

/** Why and when the bridge closed a device's session. */
export interface ClosedSession {
  at: string;
  type: string;
  message: string;
}

/** What `upsertDevice` takes: the key, and only the fields to change. */
export type DeviceUpdate = Partial<Omit<DeviceRecord, 'adapter_card_digest'>> & Pick<DeviceRecord, 'device_id' | 'workspace_id' | 'user_id'> & {
  adapter_card?: Record<string, unknown> | null;
};

/** The digest `DeviceRecord.adapter_card_digest` holds, of a card's JSON text. */
export function cardDigest(card: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(card)).digest('hex');
}

/**
 * The device record's update for a hello that succeeded, on either store: what the device says of itself,
 * seen now, and its Adapter Card only when it differs from the stored one (`known`), so a reconnect with the
 * same card (the usual case) does not write it again. The card is taken out of `hello`: the session keeps
 * no card (a bridge for 10,000 devices cannot hold 10,000 cards); the store has it.
 */
export function helloUpdate(identity: DeviceIdentity, hello: HelloParams, known: Pick<DeviceRecord, 'adapter_card_digest'> | undefined): DeviceUpdate {
  const card = hello.adapter_card;
  delete hello.adapter_card;
  const changed = card !== undefined && (!known?.adapter_card_digest || known.adapter_card_digest !== cardDigest(card));
  return {
    ...identity,
    name: hello.device.name ?? null,
    platform: hello.client.platform,
    arch: hello.client.arch,
    client_version: hello.client.version,
    last_seen: new Date().toISOString(),
    ...(changed ? { adapter_card: card } : {}),
  };
}

/** How many device records stay parsed in memory (most recently used); the rest are read when needed. */
const DEVICE_CACHE_MAX = 256;
const DEVICE_COLUMNS = ['user_id', 'name', 'platform', 'arch', 'client_version', 'last_seen', 'functions', 'functions_revision', 'adapter_card', 'adapter_card_digest', 'last_closed'] as const;
/** The columns of a device record (not its card), for both stores. */
export const DEVICE_SELECT = `SELECT workspace_id, device_id, user_id, name, platform, arch, client_version, last_seen, functions, functions_revision, adapter_card_digest, last_closed FROM bridge_devices`;

export const BRIDGE_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'calls and devices',
    up(db) {
      db.exec(`
        CREATE TABLE bridge_calls (
          workspace_id TEXT NOT NULL,
          call_id      TEXT NOT NULL,
          device_id    TEXT NOT NULL,
          function     TEXT NOT NULL,
          args_digest  TEXT NOT NULL,
          params       TEXT NOT NULL,
          state        TEXT NOT NULL,
          outcome      TEXT,
          bridge_outcome INTEGER NOT NULL DEFAULT 0,
          timeline     TEXT NOT NULL,
          deadline_ms  INTEGER NOT NULL,
          created_at   TEXT NOT NULL,
          updated_at   TEXT NOT NULL,
          PRIMARY KEY (workspace_id, call_id)
        );
        CREATE INDEX bridge_calls_open ON bridge_calls (device_id, state) WHERE outcome IS NULL;
        CREATE TABLE bridge_devices (
          device_id    TEXT PRIMARY KEY,
          workspace_id TEXT NOT NULL,
          user_id      TEXT NOT NULL,
          name TEXT, platform TEXT, arch TEXT, client_version TEXT, last_seen TEXT,
          functions    TEXT NOT NULL DEFAULT '[]',
          functions_revision INTEGER NOT NULL DEFAULT 0,
          adapter_card TEXT
        );
        CREATE INDEX bridge_devices_ws ON bridge_devices (workspace_id);
      `);
    },
  },
  {
    version: 2,
    name: 'look calls up by device (notifications and reports carry no workspace)',
    up(db) {
      db.exec(`CREATE INDEX bridge_calls_device ON bridge_calls (device_id, call_id);`);
    },
  },
  {
    version: 3,
    name: 'a device is known by (workspace, device): device ids of different workspaces never meet',
    up(db) {
      db.exec(`
        CREATE TABLE bridge_devices_v3 (
          workspace_id TEXT NOT NULL,
          device_id    TEXT NOT NULL,
          user_id      TEXT NOT NULL,
          name TEXT, platform TEXT, arch TEXT, client_version TEXT, last_seen TEXT,
          functions    TEXT NOT NULL DEFAULT '[]',
          functions_revision INTEGER NOT NULL DEFAULT 0,
          adapter_card TEXT,
          PRIMARY KEY (workspace_id, device_id)
        );
        INSERT INTO bridge_devices_v3 (workspace_id, device_id, user_id, name, platform, arch, client_version, last_seen, functions, functions_revision, adapter_card)
          SELECT workspace_id, device_id, user_id, name, platform, arch, client_version, last_seen, functions, functions_revision, adapter_card FROM bridge_devices;
        DROP TABLE bridge_devices;
        ALTER TABLE bridge_devices_v3 RENAME TO bridge_devices;
        DROP INDEX IF EXISTS bridge_calls_device;
        CREATE INDEX bridge_calls_device ON bridge_calls (workspace_id, device_id, call_id);
      `);
    },
  },
  {
    version: 4,
    name: 'no second index on calls: the primary key (workspace_id, call_id) finds a device\'s call too',
    up(db) {
      // Each index is written on every call's insert and update; this one answered nothing the key does not.
      db.exec(`DROP INDEX IF EXISTS bridge_calls_device;`);
    },
  },
  {
    version: 5,
    name: 'the digest of each device\'s Adapter Card, so the card itself stays on disk until asked for',
    up(db) {
      db.exec(`ALTER TABLE bridge_devices ADD COLUMN adapter_card_digest TEXT;`);
      const set = db.prepare(`UPDATE bridge_devices SET adapter_card_digest = ? WHERE workspace_id = ? AND device_id = ?`);
      for (const r of db.prepare(`SELECT workspace_id, device_id, adapter_card FROM bridge_devices WHERE adapter_card IS NOT NULL`).all() as { workspace_id: string; device_id: string; adapter_card: string }[]) {
        set.run(cardDigest(JSON.parse(r.adapter_card) as Record<string, unknown>), r.workspace_id, r.device_id);
      }
    },
  },
  {
    version: 6,
    name: 'protocol 1.2: whether an invoke was sent, resolution of the bridge\'s unknown, refused hellos',
    up(db) {
      // Calls recorded before this version may have been sent: they are taken as sent (an `unknown` at the
      // deadline, never a `side_effects: none` the bridge cannot vouch for).
      db.exec(`
        ALTER TABLE bridge_calls ADD COLUMN sent INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE bridge_calls ADD COLUMN resolved_from TEXT;
        ALTER TABLE bridge_calls ADD COLUMN device_outcome TEXT;
        CREATE INDEX bridge_calls_unresolved ON bridge_calls (workspace_id, device_id, updated_at) WHERE state = 'unknown' AND bridge_outcome = 1;
        CREATE TABLE bridge_refused_hellos (
          workspace_id TEXT NOT NULL,
          device_id    TEXT NOT NULL,
          type         TEXT NOT NULL,
          message      TEXT NOT NULL,
          at           TEXT NOT NULL,
          client_version TEXT NOT NULL,
          minimum      TEXT,
          protocol_version TEXT NOT NULL,
          PRIMARY KEY (workspace_id, device_id)
        );
      `);
    },
  },
  {
    version: 7,
    name: 'MCP device handles: a short stable name per device in its workspace (d1, d2, …), for workspace tool names',
    up(db) {
      db.exec(`
        CREATE TABLE bridge_mcp_handles (
          workspace_id TEXT NOT NULL,
          device_id    TEXT NOT NULL,
          n            INTEGER NOT NULL,
          PRIMARY KEY (workspace_id, device_id),
          UNIQUE (workspace_id, n)
        );
      `);
    },
  },
  {
    version: 8,
    name: 'why the bridge last closed a device\'s session (device_limits_exceeded): { at, type, message }',
    up(db) {
      db.exec(`ALTER TABLE bridge_devices ADD COLUMN last_closed TEXT;`);
    },
  },
  {
    version: 9,
    name: 'ended calls by age, for the retention sweep (call_retention_s)',
    up(db) {
      db.exec(`CREATE INDEX bridge_calls_ended ON bridge_calls (updated_at) WHERE outcome IS NOT NULL;`);
    },
  },
];

/** The bridge store's schema, for the migration runner. */
export const BRIDGE_SCHEMA: Schema = { name: 'bridge call store', migrations: BRIDGE_MIGRATIONS };

/** Call and device persistence. */
export class BridgeStore {
  readonly db: Database.Database;
  /**
   * Device records, parsed once: every call reads its device (descriptors and the Adapter Card are tens
   * of kilobytes of JSON), and this store is their only writer.
   */
  private readonly deviceCache = new Map<string, DeviceRecord>();
  private deviceWrites: (() => void)[] = [];

  constructor(path: string) {
    // Exclusive: one bridge process owns its store; commits then take no file locks and no shared-memory index.
    this.db = openDatabase(path, 'NORMAL', true);
    migrate(this.db, BRIDGE_SCHEMA);
  }

  insertCall(c: StoredCall): void {
    statement(this.db, 
        `INSERT INTO bridge_calls (workspace_id, call_id, device_id, function, args_digest, params, state, outcome, bridge_outcome, timeline, deadline_ms, created_at, updated_at, sent)
         VALUES (@workspace_id, @call_id, @device_id, @function, @args_digest, @params, @state, NULL, 0, @timeline, @deadline_ms, @created_at, @updated_at, @sent)`,
      )
      .run({
        workspace_id: c.workspace_id, call_id: c.call_id, device_id: c.device_id, function: c.function, args_digest: c.args_digest, state: c.state,
        deadline_ms: c.deadline_ms, created_at: c.created_at, updated_at: c.updated_at,
        params: JSON.stringify(c.params), timeline: JSON.stringify(c.timeline), sent: c.sent ? 1 : 0,
      });
  }

  getCall(workspaceId: string, callId: string): StoredCall | undefined {
    const r = statement(this.db, `SELECT * FROM bridge_calls WHERE workspace_id = ? AND call_id = ?`).get(workspaceId, callId) as Record<string, unknown> | undefined;
    return r ? toCall(r) : undefined;
  }

  /** Calls not yet terminal (for one device, or all). */
  /**
   * Removes at most `limit` ended calls last changed before `beforeIso` (the retention sweep); returns how many.
   * An open call is never removed, however old.
   */
  pruneEndedCalls(beforeIso: string, limit: number): number {
    return statement(this.db, `DELETE FROM bridge_calls WHERE rowid IN (SELECT rowid FROM bridge_calls WHERE outcome IS NOT NULL AND updated_at < ? ORDER BY updated_at LIMIT ?)`).run(beforeIso, limit).changes;
  }

  openCalls(deviceId?: string): StoredCall[] {
    const rows = (deviceId
      ? statement(this.db, `SELECT * FROM bridge_calls WHERE outcome IS NULL AND device_id = ?`).all(deviceId)
      : statement(this.db, `SELECT * FROM bridge_calls WHERE outcome IS NULL`).all()) as Record<string, unknown>[];
    return rows.map(toCall);
  }

  /** Finds a call by the session's workspace, device and the call's id (call.report carries only the call id). */
  findByDevice(workspaceId: string, deviceId: string, callId: string): StoredCall | undefined {
    const r = statement(this.db, `SELECT * FROM bridge_calls WHERE workspace_id = ? AND device_id = ? AND call_id = ?`).get(workspaceId, deviceId, callId) as Record<string, unknown> | undefined;
    return r ? toCall(r) : undefined;
  }

  /**
   * The calls the bridge itself ended `unknown` on this device since `sinceIso` and that no device outcome
   * has resolved yet (§6.8: re-asked with `call.get` after every reconnect).
   */
  unresolvedUnknowns(workspaceId: string, deviceId: string, sinceIso: string): StoredCall[] {
    const rows = statement(this.db, `SELECT * FROM bridge_calls WHERE workspace_id = ? AND device_id = ? AND state = 'unknown' AND bridge_outcome = 1 AND updated_at >= ? AND resolved_from IS NULL`)
      .all(workspaceId, deviceId, sinceIso) as Record<string, unknown>[];
    return rows.map(toCall);
  }

  /** The last refused hello of a device, if its latest attempt was refused. */
  refusedHello(workspaceId: string, deviceId: string): RefusedHello | undefined {
    const r = statement(this.db, `SELECT type, message, at, client_version, minimum, protocol_version FROM bridge_refused_hellos WHERE workspace_id = ? AND device_id = ?`).get(workspaceId, deviceId) as
      | (Omit<RefusedHello, 'minimum'> & { minimum: string | null })
      | undefined;
    if (!r) return undefined;
    const { minimum, ...rest } = r;
    return { ...rest, ...(minimum ? { minimum } : {}) };
  }

  /** Records a refused hello (replacing the device's previous one). */
  saveRefusedHello(workspaceId: string, deviceId: string, h: RefusedHello): void {
    statement(this.db, `INSERT INTO bridge_refused_hellos (workspace_id, device_id, type, message, at, client_version, minimum, protocol_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT(workspace_id, device_id) DO UPDATE SET type = excluded.type, message = excluded.message, at = excluded.at, client_version = excluded.client_version, minimum = excluded.minimum, protocol_version = excluded.protocol_version`)
      .run(workspaceId, deviceId, h.type, h.message, h.at, h.client_version, h.minimum ?? null, h.protocol_version);
  }

  /** The `deviceKey` of every device with a refused hello on record. */
  refusedHelloKeys(): string[] {
    return (statement(this.db, `SELECT workspace_id, device_id FROM bridge_refused_hellos`).all() as { workspace_id: string; device_id: string }[]).map((r) => deviceKey(r.workspace_id, r.device_id));
  }

  /** Forgets a device's refused hello (its hello just succeeded). */
  clearRefusedHello(workspaceId: string, deviceId: string): void {
    statement(this.db, `DELETE FROM bridge_refused_hellos WHERE workspace_id = ? AND device_id = ?`).run(workspaceId, deviceId);
  }

  /** Runs `fn` in one transaction (one commit for all its writes). */
  transaction(fn: () => void): void {
    this.db.transaction(fn)();
  }

  /** Saves several calls in one transaction. */
  saveCalls(calls: Iterable<StoredCall>): void {
    this.db.transaction(() => {
      for (const c of calls) this.saveCall(c);
    })();
  }

  saveCall(c: StoredCall): void {
    statement(this.db, `UPDATE bridge_calls SET state = @state, outcome = @outcome, bridge_outcome = @bo, timeline = @timeline, updated_at = @updated_at,
        sent = @sent, resolved_from = @resolved_from, device_outcome = @device_outcome WHERE workspace_id = @workspace_id AND call_id = @call_id`)
      .run({
        sent: c.sent ? 1 : 0,
        resolved_from: c.resolved_from ? JSON.stringify(c.resolved_from) : null,
        device_outcome: c.device_outcome ? JSON.stringify(c.device_outcome) : null,
        workspace_id: c.workspace_id,
        call_id: c.call_id,
        state: c.state,
        outcome: c.outcome ? JSON.stringify(c.outcome) : null,
        bo: c.bridge_outcome ? 1 : 0,
        timeline: JSON.stringify(c.timeline),
        updated_at: c.updated_at,
      });
  }

  /**
   * Creates the device or changes only the fields given (one statement, no read): the card, when given,
   * is written with its digest and never cached. `replace: false` leaves a known device as it is.
   */
  upsertDevice(d: DeviceUpdate, replace = true): void {
    const key = deviceKey(d.workspace_id, d.device_id);
    const cached = this.deviceCache.get(key);
    if (cached && replace) {
      const { adapter_card: card, ...rest } = d;
      Object.assign(cached, rest, card !== undefined ? { adapter_card_digest: card ? cardDigest(card) : null } : {});
    }
    // Device writes of one turn share one commit (a reconnect storm is thousands of hellos, each with two
    // writes). A device record is rebuilt by the device's next hello, so a crash may lose the last turn's.
    this.deviceWrites.push(() => this.writeDevice(d, replace));
    if (this.deviceWrites.length === 1) setImmediate(() => this.flushDevices());
  }

  /** Commits the queued device writes; every read from the devices table calls it first. */
  flushDevices(): void {
    if (!this.deviceWrites.length || !this.db.open) return;
    const writes = this.deviceWrites;
    this.deviceWrites = [];
    this.db.transaction(() => {
      for (const w of writes) w();
    })();
  }

  private writeDevice(d: DeviceUpdate, replace: boolean): void {
    const row = deviceRow(d);
    const cols = Object.keys(row);
    const updates = cols.filter((c) => c !== 'workspace_id' && c !== 'device_id').map((c) => `${c} = excluded.${c}`);
    statement(this.db, `INSERT INTO bridge_devices (${cols.join(', ')}) VALUES (${cols.map((c) => '@' + c).join(', ')})
      ON CONFLICT(workspace_id, device_id) DO ${updates.length && replace ? 'UPDATE SET ' + updates.join(', ') : 'NOTHING'}`).run(row);
  }

  /** A device's record in one workspace (shared: callers must not change it; `upsertDevice` replaces it). */
  getDevice(workspaceId: string, deviceId: string): DeviceRecord | undefined {
    const key = deviceKey(workspaceId, deviceId);
    const cached = this.deviceCache.get(key);
    if (cached) {
      // Most recently used last: the first entry is the one to evict.
      this.deviceCache.delete(key);
      this.deviceCache.set(key, cached);
      return cached;
    }
    this.flushDevices();
    const r = statement(this.db, `${DEVICE_SELECT} WHERE workspace_id = ? AND device_id = ?`).get(workspaceId, deviceId) as Record<string, unknown> | undefined;
    if (!r) return undefined;
    const d = toDevice(r);
    this.deviceCache.set(key, d);
    if (this.deviceCache.size > DEVICE_CACHE_MAX) this.deviceCache.delete(this.deviceCache.keys().next().value!);
    return d;
  }

  /** The device's stored Adapter Card (read from the store each time: cards are not kept in memory). */
  adapterCard(workspaceId: string, deviceId: string): Record<string, unknown> | null {
    this.flushDevices();
    const r = statement(this.db, `SELECT adapter_card FROM bridge_devices WHERE workspace_id = ? AND device_id = ?`).get(workspaceId, deviceId) as { adapter_card: string | null } | undefined;
    return r?.adapter_card ? (JSON.parse(r.adapter_card) as Record<string, unknown>) : null;
  }

  devices(workspaceId: string): DeviceRecord[] {
    this.flushDevices();
    return (statement(this.db, `${DEVICE_SELECT} WHERE workspace_id = ? ORDER BY device_id`).all(workspaceId) as Record<string, unknown>[]).map(toDevice);
  }

  /**
   * The MCP handles of a workspace's devices (`d<n>`, docs/mcp.md), assigning the next free one to each
   * device of `assign` that has none. A handle, once given, stays the device's.
   */
  mcpHandles(workspaceId: string, assign: readonly string[] = []): Map<string, string> {
    const rows = statement(this.db, `SELECT device_id, n FROM bridge_mcp_handles WHERE workspace_id = ?`).all(workspaceId) as { device_id: string; n: number }[];
    const out = new Map(rows.map((r) => [r.device_id, `d${r.n}`]));
    const missing = assign.filter((d) => !out.has(d));
    if (missing.length) {
      let next = rows.reduce((m, r) => Math.max(m, r.n), 0);
      const insert = statement(this.db, `INSERT INTO bridge_mcp_handles (workspace_id, device_id, n) VALUES (?, ?, ?)`);
      this.db.transaction(() => {
        for (const d of missing) {
          insert.run(workspaceId, d, ++next);
          out.set(d, `d${next}`);
        }
      })();
    }
    return out;
  }

  /** Forgets the parsed device records (after a rolled-back transaction changed some of them in memory). */
  dropDeviceCache(): void {
    this.deviceCache.clear();
  }

  close(): void {
    this.flushDevices();
    this.db.close();
  }
}

/**
 * The columns a device update writes (the key, and only the fields given), as both stores write them:
 * JSON as text, the card with its digest.
 */
export function deviceRow(d: DeviceUpdate): Record<string, unknown> {
  const row: Record<string, unknown> = { workspace_id: d.workspace_id, device_id: d.device_id };
  for (const k of DEVICE_COLUMNS) {
    if (!(k in d) || k === 'adapter_card_digest') continue;
    const v = (d as Record<string, unknown>)[k];
    if (k === 'functions') row[k] = JSON.stringify(v ?? []);
    else if (k === 'last_closed') row[k] = v ? JSON.stringify(v) : null;
    else if (k === 'adapter_card') {
      row[k] = v ? JSON.stringify(v) : null;
      row['adapter_card_digest'] = v ? cardDigest(v as Record<string, unknown>) : null;
    } else row[k] = v ?? null;
  }
  return row;
}

/** The one key of a device everywhere in the bridge: a device id means nothing without its workspace. */
export function deviceKey(workspaceId: string, deviceId: string): string {
  return `${workspaceId}\u0000${deviceId}`;
}

/** A stored call from its row (SQLite's column types: JSON as text, flags as 0/1). */
export function toCall(r: Record<string, unknown>): StoredCall {
  const c: StoredCall = {
    call_id: r['call_id'] as string,
    workspace_id: r['workspace_id'] as string,
    device_id: r['device_id'] as string,
    function: r['function'] as string,
    state: r['state'] as BridgeCallState,
    created_at: r['created_at'] as string,
    updated_at: r['updated_at'] as string,
    timeline: JSON.parse(r['timeline'] as string) as CallRecord['timeline'],
    args_digest: r['args_digest'] as string,
    params: JSON.parse(r['params'] as string) as InvokeParams,
    deadline_ms: r['deadline_ms'] as number,
    bridge_outcome: r['bridge_outcome'] === 1,
    sent: r['sent'] !== 0,
  };
  if (typeof r['outcome'] === 'string') c.outcome = JSON.parse(r['outcome']) as Outcome;
  if (typeof r['resolved_from'] === 'string') c.resolved_from = JSON.parse(r['resolved_from']) as ResolvedFrom;
  if (typeof r['device_outcome'] === 'string') c.device_outcome = JSON.parse(r['device_outcome']) as Outcome;
  if (typeof r['progress'] === 'string') c.progress = JSON.parse(r['progress']) as ProgressNote;
  return c;
}

/** A device record from its row (JSON as text). */
export function toDevice(r: Record<string, unknown>): DeviceRecord {
  return {
    device_id: r['device_id'] as string,
    workspace_id: r['workspace_id'] as string,
    user_id: r['user_id'] as string,
    name: (r['name'] as string | null) ?? null,
    platform: (r['platform'] as string | null) ?? null,
    arch: (r['arch'] as string | null) ?? null,
    client_version: (r['client_version'] as string | null) ?? null,
    last_seen: (r['last_seen'] as string | null) ?? null,
    functions: JSON.parse(r['functions'] as string) as Descriptor[],
    functions_revision: r['functions_revision'] as number,
    adapter_card_digest: (r['adapter_card_digest'] as string | null) ?? null,
    last_closed: typeof r['last_closed'] === 'string' ? (JSON.parse(r['last_closed']) as ClosedSession) : null,
  };
}

/** The public call record (§10) of a stored call. */
export function publicRecord(c: StoredCall): CallRecord {
  const r: CallRecord = {
    call_id: c.call_id,
    workspace_id: c.workspace_id,
    device_id: c.device_id,
    function: c.function,
    state: c.state,
    created_at: c.created_at,
    updated_at: c.updated_at,
    timeline: c.timeline,
  };
  if (c.outcome) r.outcome = c.outcome;
  if (c.resolved_from) r.resolved_from = c.resolved_from;
  if (c.device_outcome) r.device_outcome = c.device_outcome;
  return r;
}
