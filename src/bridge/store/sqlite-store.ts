/**
 * The embedded store (SQLite, one bridge process) behind the asynchronous interface: today's `BridgeStore`,
 * unchanged, wrapped. A transaction holds the one connection: operations on the store itself wait until it
 * ends, so nothing else's writes join it (better-sqlite3's own transactions cannot span an `await`).
 */
import type Database from 'better-sqlite3';
import { statement } from '../../storage/sqlite.js';
import { nodeChannel } from '../cluster/bus.js';
import { BridgeStore, type DeviceUpdate, type StoredCall } from '../store.js';
import type { AsyncBridgeStore, CallKey, ClusterNodeRecord, DeviceSession, FencedCall, FencedCallKey, HeartbeatResult, JoinResult, NodeConfigDigest, SentMark, StoreOps } from './async-store.js';

/** Hears a notification: its channel and payload. */
export type NotifyListener = (channel: string, payload: string) => void;

/** The SQLite implementation of {@link AsyncBridgeStore}. */
export class SqliteBridgeStore implements AsyncBridgeStore {
  readonly kind = 'sqlite' as const;
  /** Ends when the running transaction ends (null: none runs). */
  private held: Promise<void> | null = null;
  private readonly direct: StoreOps;
  /** This process's bus listeners (`local-bus.ts`): one process is the whole cluster. */
  private readonly listeners = new Set<NotifyListener>();
  /** This process as the cluster's one node, once it joined. */
  private node: ClusterNodeRecord | undefined;

  constructor(readonly store: BridgeStore) {
    // One process is the whole cluster: its device sessions live and die with it, in a TEMP table (not in the
    // file, so no migration), which still takes part in transactions.
    store.db.exec(`CREATE TEMP TABLE IF NOT EXISTS device_sessions (
      workspace_id TEXT NOT NULL, device_id TEXT NOT NULL, node_id TEXT NOT NULL, epoch INTEGER NOT NULL, lease_until INTEGER NOT NULL, protocol_version TEXT,
      PRIMARY KEY (workspace_id, device_id))`);
    this.direct = directOps(store, false, (channel, payload) => queueMicrotask(() => this.deliver(channel, payload)));
  }

  /** Hears what `notify` sends (after its transaction commits); returns the function that stops it. */
  listen(fn: NotifyListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private deliver(channel: string, payload: string): void {
    for (const fn of this.listeners) fn(channel, payload);
  }

  /** Opens (creating and migrating) the store file at `path`. */
  static open(path: string): SqliteBridgeStore {
    return new SqliteBridgeStore(new BridgeStore(path));
  }

  private async idle(): Promise<void> {
    while (this.held) await this.held;
  }

  /** Runs `f` now, or once no transaction holds the connection. */
  private run<T>(f: () => Promise<T>): Promise<T> {
    return this.held ? this.idle().then(() => this.run(f)) : f();
  }

  async transaction<T>(fn: (tx: StoreOps) => Promise<T>): Promise<T> {
    await this.idle();
    let release!: () => void;
    this.held = new Promise<void>((r) => (release = r));
    const db = this.store.db;
    try {
      this.store.flushDevices();
      db.exec('BEGIN IMMEDIATE');
      // Notifications wait for the commit, and are dropped by a rollback (as PostgreSQL's NOTIFY).
      const queued: [string, string][] = [];
      try {
        const out = await fn(directOps(this.store, true, (channel, payload) => void queued.push([channel, payload])));
        db.exec('COMMIT');
        queueMicrotask(() => queued.forEach(([c, p]) => this.deliver(c, p)));
        return out;
      } catch (e) {
        if (db.inTransaction) db.exec('ROLLBACK');
        // Device records the transaction changed in memory are read again from the file.
        this.store.dropDeviceCache();
        throw e;
      }
    } finally {
      this.held = null;
      release();
    }
  }

  insertCall(c: StoredCall) { return this.run(() => this.direct.insertCall(c)); }
  submitCall(c: StoredCall, payload: string) { return this.run(() => this.direct.submitCall(c, payload)); }
  getCall(ws: string, id: string) { return this.run(() => this.direct.getCall(ws, id)); }
  getCalls(keys: readonly CallKey[]) { return this.run(() => this.direct.getCalls(keys)); }
  openCalls(deviceId?: string) { return this.run(() => this.direct.openCalls(deviceId)); }
  claimExpiredCalls(graceMs: number, limit: number) { return this.run(() => this.direct.claimExpiredCalls(graceMs, limit)); }
  findByDevice(ws: string, dev: string, id: string) { return this.run(() => this.direct.findByDevice(ws, dev, id)); }
  unresolvedUnknowns(ws: string, dev: string, since: string) { return this.run(() => this.direct.unresolvedUnknowns(ws, dev, since)); }
  saveCall(c: StoredCall) { return this.run(() => this.direct.saveCall(c)); }
  saveCalls(calls: Iterable<StoredCall>) { return this.run(() => this.direct.saveCalls(calls)); }
  pruneEndedCalls(beforeIso: string, limit: number) { return this.run(() => this.direct.pruneEndedCalls(beforeIso, limit)); }
  refusedHello(ws: string, dev: string) { return this.run(() => this.direct.refusedHello(ws, dev)); }
  saveRefusedHello(ws: string, dev: string, h: Parameters<StoreOps['saveRefusedHello']>[2]) { return this.run(() => this.direct.saveRefusedHello(ws, dev, h)); }
  clearRefusedHello(ws: string, dev: string) { return this.run(() => this.direct.clearRefusedHello(ws, dev)); }
  refusedHelloKeys() { return this.run(() => this.direct.refusedHelloKeys()); }
  upsertDevice(d: DeviceUpdate, replace = true) { return this.run(() => this.direct.upsertDevice(d, replace)); }
  getDevice(ws: string, dev: string) { return this.run(() => this.direct.getDevice(ws, dev)); }
  callTarget(ws: string, dev: string, fn: string) { return this.run(() => this.direct.callTarget(ws, dev, fn)); }
  adapterCard(ws: string, dev: string) { return this.run(() => this.direct.adapterCard(ws, dev)); }
  devices(ws: string) { return this.run(() => this.direct.devices(ws)); }
  notify(channel: string, payload: string) { return this.run(() => this.direct.notify(channel, payload)); }
  claimSession(ws: string, dev: string, node: string, leaseMs: number, protocolVersion?: string) { return this.run(() => this.direct.claimSession(ws, dev, node, leaseMs, protocolVersion)); }
  isCurrent(ws: string, dev: string, epoch: number) { return this.run(() => this.direct.isCurrent(ws, dev, epoch)); }
  session(ws: string, dev: string, hold?: boolean) { return this.run(() => this.direct.session(ws, dev, hold)); }
  fencedCalls(items: readonly FencedCallKey[]) { return this.run(() => this.direct.fencedCalls(items)); }
  markSent(items: readonly FencedCallKey[]) { return this.run(() => this.direct.markSent(items)); }
  renewLeases(node: string, leaseMs: number) { return this.run(() => this.direct.renewLeases(node, leaseMs)); }
  releaseSession(ws: string, dev: string, epoch: number) { return this.run(() => this.direct.releaseSession(ws, dev, epoch)); }
  lapsedSessions() { return this.run(() => this.direct.lapsedSessions()); }
  nodeSessions(nodeId: string) { return this.run(() => this.direct.nodeSessions(nodeId)); }
  openCallsOfNode(nodeId: string) { return this.run(() => this.direct.openCallsOfNode(nodeId)); }

  /** One process is the whole cluster: it joins, always, and is its only node. */
  async joinCluster(nodeId: string, config: NodeConfigDigest): Promise<JoinResult> {
    const now = new Date().toISOString();
    this.node = { node_id: nodeId, config, started_at: now, last_seen: now };
    return { joined: true, started_at: now };
  }

  async nodeHeartbeat(nodeId: string, startedAt: string): Promise<HeartbeatResult> {
    if (this.node?.node_id !== nodeId) return 'gone';
    if (this.node.started_at !== startedAt) return 'taken';
    this.node.last_seen = new Date().toISOString();
    return 'ok';
  }

  async clusterNodes(): Promise<ClusterNodeRecord[]> {
    return this.node ? [{ ...this.node }] : [];
  }

  async leaveCluster(nodeId: string, startedAt: string): Promise<void> {
    if (this.node?.node_id === nodeId && this.node.started_at === startedAt) this.node = undefined;
  }

  async close(): Promise<void> {
    await this.idle();
    this.store.close();
  }
}

/** True for SQLite's refusal of a second row with the same primary key. */
function isDuplicateKey(e: unknown): boolean {
  return (e as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * The operations straight on `store`. `inTransaction`: device writes go into the open transaction now
 * (not `BridgeStore`'s write-behind, which would commit them after a rollback).
 */
function directOps(store: BridgeStore, inTransaction: boolean, notify: NotifyListener): StoreOps {
  const sessions = sessionOps(store.db);
  const insertCall = async (c: StoredCall): Promise<boolean> => {
    try {
      store.insertCall(c);
      return true;
    } catch (e) {
      if (isDuplicateKey(e)) return false;
      throw e;
    }
  };
  return {
    ...sessions,
    // One process holds SQLite's one connection: the batch is a loop, and nothing comes between the check and
    // the read (or the write).
    async fencedCalls(items) {
      const out: FencedCall[] = [];
      for (const k of items) {
        const call = store.getCall(k.workspace_id, k.call_id);
        out.push({ current: await sessions.isCurrent(k.workspace_id, k.device_id, k.epoch), ...(call ? { call } : {}) });
      }
      return out;
    },
    async markSent(items) {
      const out: SentMark[] = [];
      for (const k of items) {
        if (!(await sessions.isCurrent(k.workspace_id, k.device_id, k.epoch))) {
          out.push('refused');
          continue;
        }
        const call = store.getCall(k.workspace_id, k.call_id);
        if (!call || call.sent) {
          out.push('unchanged');
          continue;
        }
        call.sent = true;
        store.saveCall(call);
        out.push('written');
      }
      return out;
    },
    insertCall,
    async submitCall(c, payload) {
      const s = await sessions.session(c.workspace_id, c.device_id);
      if (!s || s.lapsed) return 'offline';
      if (!(await insertCall(c))) return 'exists';
      notify(nodeChannel(s.node_id), payload);
      return 'sent';
    },
    getCall: async (ws, id) => store.getCall(ws, id),
    getCalls: async (keys) => keys.map((k) => store.getCall(k.workspace_id, k.call_id)),
    openCalls: async (deviceId) => store.openCalls(deviceId),
    async openCallsOfNode(node) {
      const held = new Set((statement(store.db, `SELECT workspace_id, device_id FROM temp.device_sessions WHERE node_id = ?`).all(node) as { workspace_id: string; device_id: string }[]).map((r) => `${r.workspace_id}/${r.device_id}`));
      return held.size ? store.openCalls().filter((c) => held.has(`${c.workspace_id}/${c.device_id}`)) : [];
    },
    // One process is the whole cluster: nobody else could take a call meanwhile.
    claimExpiredCalls: async (graceMs, limit) => {
      const before = Date.now() - graceMs;
      return store.openCalls().filter((c) => c.deadline_ms <= before).sort((a, b) => a.deadline_ms - b.deadline_ms).slice(0, limit);
    },
    findByDevice: async (ws, dev, id) => store.findByDevice(ws, dev, id),
    unresolvedUnknowns: async (ws, dev, since) => store.unresolvedUnknowns(ws, dev, since),
    saveCall: async (c) => store.saveCall(c),
    saveCalls: async (calls) => store.saveCalls(calls),
    pruneEndedCalls: async (before, limit) => store.pruneEndedCalls(before, limit),
    refusedHello: async (ws, dev) => store.refusedHello(ws, dev),
    saveRefusedHello: async (ws, dev, h) => store.saveRefusedHello(ws, dev, h),
    clearRefusedHello: async (ws, dev) => store.clearRefusedHello(ws, dev),
    refusedHelloKeys: async () => store.refusedHelloKeys(),
    async upsertDevice(d, replace = true) {
      store.upsertDevice(d, replace);
      if (inTransaction) store.flushDevices();
    },
    getDevice: async (ws, dev) => store.getDevice(ws, dev),
    async callTarget(ws, dev, fn) {
      // The device record is in memory here: nothing to parse.
      const d = store.getDevice(ws, dev);
      if (!d) return undefined;
      const t = d.functions.find((f) => f.id === fn)?.timeout_ms_default;
      return { user_id: d.user_id, ...(typeof t === 'number' ? { timeout_ms_default: t } : {}) };
    },
    adapterCard: async (ws, dev) => store.adapterCard(ws, dev),
    devices: async (ws) => store.devices(ws),
    notify: async (channel, payload) => notify(channel, payload),
  };
}

/** Epochs of this process's sessions: they only grow (the process is the whole cluster). */
let lastEpoch = 0;

/** A session row: times are ms since the epoch, `now` is this process's clock. */
function sessionOf(r: { workspace_id: string; device_id: string; node_id: string; epoch: number; lease_until: number; protocol_version: string | null }, now: number): DeviceSession {
  return { ...r, lease_until: new Date(r.lease_until).toISOString(), lapsed: r.lease_until <= now };
}

/** Device sessions in the TEMP table (every operation is synchronous, so a claim cannot interleave). */
function sessionOps(db: Database.Database): Pick<StoreOps, 'claimSession' | 'isCurrent' | 'session' | 'renewLeases' | 'releaseSession' | 'lapsedSessions' | 'nodeSessions'> {
  type Row = Parameters<typeof sessionOf>[0];
  const get = (ws: string, dev: string) => statement(db, `SELECT * FROM temp.device_sessions WHERE workspace_id = ? AND device_id = ?`).get(ws, dev) as Row | undefined;
  return {
    async claimSession(ws, dev, node, leaseMs, version) {
      const now = Date.now();
      const old = get(ws, dev);
      const epoch = ++lastEpoch;
      statement(db, `INSERT OR REPLACE INTO temp.device_sessions (workspace_id, device_id, node_id, epoch, lease_until, protocol_version) VALUES (?, ?, ?, ?, ?, ?)`).run(ws, dev, node, epoch, now + leaseMs, version ?? null);
      return { epoch, previous: old ? { node_id: old.node_id, epoch: old.epoch, lapsed: old.lease_until <= now } : null };
    },
    isCurrent: async (ws, dev, epoch) => get(ws, dev)?.epoch === epoch,
    // `hold` needs nothing here: every operation is synchronous, so a claim cannot come between.
    async session(ws, dev) {
      const r = get(ws, dev);
      return r ? sessionOf(r, Date.now()) : undefined;
    },
    renewLeases: async (node, leaseMs) => statement(db, `UPDATE temp.device_sessions SET lease_until = ? WHERE node_id = ?`).run(Date.now() + leaseMs, node).changes,
    releaseSession: async (ws, dev, epoch) => statement(db, `DELETE FROM temp.device_sessions WHERE workspace_id = ? AND device_id = ? AND epoch = ?`).run(ws, dev, epoch).changes === 1,
    async lapsedSessions() {
      const now = Date.now();
      return (statement(db, `SELECT * FROM temp.device_sessions WHERE lease_until <= ? ORDER BY workspace_id, device_id`).all(now) as Row[]).map((r) => sessionOf(r, now));
    },
    async nodeSessions(node) {
      const now = Date.now();
      return (statement(db, `SELECT * FROM temp.device_sessions WHERE node_id = ? ORDER BY workspace_id, device_id`).all(node) as Row[]).map((r) => sessionOf(r, now));
    },
  };
}
