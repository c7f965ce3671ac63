/**
 * Bridge clusters for the tests of issue 34 (test/bridge/cluster-*.test.ts): nodes on one fresh database of a
 * private PostgreSQL (test/helpers/postgres.ts), either in this process (`ClusterNodeServer`) or as real
 * `aios-device bridge` child processes, sharing one set of tokens; simulated devices (bench/sim-device.ts) and
 * the runtime's calls against them.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { silentLogger } from '../../src/base/logger.js';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import { ClusterNodeServer, type ClusterNodeServerOptions } from '../../src/bridge/cluster/node-server.js';
import { PgBridgeStore } from '../../src/bridge/store/pg-store.js';
import type { Outcome } from '../../src/protocol/messages.js';
import { SimDevice, type SimDeviceOptions, type SimIdentity } from '../../bench/sim-device.js';
import { freePort } from './net.js';
import type { PrivatePostgres } from './postgres.js';
import { cli, ids, procReport, type Proc, type tokens } from './stack.js';
import { until } from './wait.js';

/** A runtime token and a device token (the stack's identity, `ids`). */
export type Tokens = ReturnType<typeof tokens>;

/** Device tokens and who each one is. */
export type DeviceTokens = Record<string, SimIdentity>;

let databases = 0;

/** `n` devices of `ids`' workspace and user (`dev_0`…), each with its own token. */
export function manyDevices(n: number): { tokens: DeviceTokens; devices: { token: string; identity: SimIdentity }[] } {
  const tokens: DeviceTokens = {};
  const devices = Array.from({ length: n }, (_, i) => {
    const identity = { workspace_id: ids.workspace_id, user_id: ids.user_id, device_id: `dev_${i}` };
    const token = `dt_${randomBytes(9).toString('hex')}_${i}`;
    tokens[token] = identity;
    return { token, identity };
  });
  return { tokens, devices };
}

/** A fresh database on `server` for one test, named after `what`. */
export function clusterDatabase(server: PrivatePostgres, what: string): string {
  return server.createDatabase(`${what}${process.pid}_${++databases}`);
}

/**
 * The keys every node of one cluster shares (their digests must match), on the database at `db`: the runtime
 * token of `t` for `ids`' workspace, and `devices` (default: `t.device` as `ids`).
 */
export function sharedKeys(t: Tokens, db: string, devices: DeviceTokens = { [t.device]: { ...ids } }) {
  return {
    runtime_tokens: { [t.runtime]: { workspace_id: ids.workspace_id, name: 'Agent' } },
    device_tokens: devices,
    store: { kind: 'postgres', url: db },
  };
}

/**
 * A node of the cluster in this process (not started), with a 200 ms heartbeat; `config` adds or replaces bridge
 * config keys on every node (e.g. `runtime_rate_limit`, `users`).
 */
export function clusterNode(t: Tokens, db: string, nodeId: string, o: Partial<ClusterNodeServerOptions> = {}, devices?: DeviceTokens, config: Record<string, unknown> = {}): ClusterNodeServer {
  const config_ = normalizeBridgeConfig({ data_dir: '/nonexistent/unused', listen: { host: '127.0.0.1', port: 0 }, ...sharedKeys(t, db, devices), ...config, cluster: { node_id: nodeId } });
  return new ClusterNodeServer(config_, { log: silentLogger(), heartbeatMs: 200, ...o });
}

/** Nodes in this process on one database, their URLs, the store seen from outside, and `stop()`. */
export interface InProcessCluster {
  db: string;
  nodes: ClusterNodeServer[];
  urls: string[];
  store: PgBridgeStore;
  stop(): Promise<void>;
}

/** Starts nodes `nodeIds` in this process on a fresh database of `server` (options per node id). */
export async function startCluster(
  server: PrivatePostgres,
  what: string,
  t: Tokens,
  nodeIds: string[],
  opts: Record<string, Partial<ClusterNodeServerOptions>> = {},
  devices?: DeviceTokens,
  config: Record<string, unknown> = {},
): Promise<InProcessCluster> {
  const db = clusterDatabase(server, what);
  const nodes: ClusterNodeServer[] = [];
  const urls: string[] = [];
  const store = await PgBridgeStore.open(db, { max: 2 });
  const stop = async () => {
    await Promise.all(nodes.map((x) => x.stop().catch(() => undefined)));
    await store.close();
  };
  try {
    for (const id of nodeIds) {
      const node = clusterNode(t, db, id, opts[id], devices, config);
      nodes.push(node);
      urls.push(await node.start());
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return { db, nodes, urls, store, stop };
}

/** A node as a real `aios-device bridge` process. */
export interface NodeProcess {
  nodeId: string;
  url: string;
  proc: Proc;
}

/**
 * Starts node `nodeId` as an `aios-device bridge` child process (its config file and data folder in `dir`) and
 * waits for its "joined" line; `kill` it (SIGKILL) or stop it (SIGTERM) when done.
 */
export async function startNodeProcess(dir: string, t: Tokens, db: string, nodeId: string, devices?: DeviceTokens, ms = 30_000): Promise<NodeProcess> {
  const port = await freePort();
  const file = join(dir, `${nodeId}.json.cfg`);
  writeFileSync(file, JSON.stringify({ data_dir: join(dir, nodeId), listen: { host: '127.0.0.1', port }, ...sharedKeys(t, db, devices), cluster: { node_id: nodeId } }));
  const proc = cli(['bridge', '--config', file]);
  const joined = new RegExp(`cluster node ${nodeId} joined`);
  try {
    await until(() => {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) throw new Error(`node ${nodeId} exited at start\n${procReport(nodeId, proc)}`);
      return joined.test(proc.err);
    }, ms, () => `node ${nodeId}'s start line\n${procReport(nodeId, proc)}`);
  } catch (e) {
    await stopProcess(proc, 'SIGKILL');
    throw e;
  }
  return { nodeId, url: `http://127.0.0.1:${port}`, proc };
}

/** Ends a child process that may have ended already. */
export async function stopProcess(proc: Proc, sig: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (proc.child.exitCode === null && proc.child.signalCode === null) await proc.kill(sig);
}

/** The WebSocket address of a node's device endpoint. */
export const deviceUrl = (url: string): string => url.replace(/^http/, 'ws') + '/v1/device';

/** A simulated device with the stack's identity and device token, on the node at `url`, speaking 1.2. */
export function simOn(url: string, t: Tokens, o: Partial<SimDeviceOptions> = {}): SimDevice {
  return new SimDevice({ url: deviceUrl(url), token: t.device, identity: ids, protocolVersion: '1.2', ...o });
}

/** The error body of a 503 while the store cannot be reached (PROTOCOL §2, §10). */
export const STORE_UNAVAILABLE = { code: -41062, type: 'store_unavailable', message: 'The bridge cannot reach its database; try again later.', retryable: true };

/** What `POST /v1/calls` answered. */
export interface Submitted {
  status: number;
  retryAfter: string | null;
  body: { call_id: string; state: string; outcome?: Outcome; error?: { type: string } } & Record<string, unknown>;
}

/** `POST /v1/calls` on the node at `url` for `ids`' device (unless `body` names another). */
export async function submit(url: string, t: Tokens, body: Record<string, unknown>, signal?: AbortSignal): Promise<Submitted> {
  const r = await fetch(`${url}/v1/calls`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.runtime}`, 'content-type': 'application/json' },
    body: JSON.stringify({ workspace_id: ids.workspace_id, device_id: ids.device_id, ...body }),
    ...(signal ? { signal } : {}),
  });
  return { status: r.status, retryAfter: r.headers.get('retry-after'), body: (await r.json()) as Submitted['body'] };
}

/** A call's record as `GET /v1/calls/{id}` gives it. */
export interface CallRecord {
  state: string;
  updated_at: string;
  outcome?: Outcome;
  resolved_from?: unknown;
  timeline: { state?: string; event?: string }[];
}

/** `GET /v1/calls/{id}` on the node at `url`. */
export const getCall = async (url: string, t: Tokens, id: string): Promise<CallRecord> =>
  (await (await fetch(`${url}/v1/calls/${id}`, { headers: { authorization: `Bearer ${t.runtime}` } })).json()) as CallRecord;

/** `p`'s value, failing after `ms` (times the slack) instead of hanging when it never comes. */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let got: { v: T } | undefined;
  let failed: unknown;
  p.then((v) => (got = { v }), (e: unknown) => (failed = e ?? new Error(what)));
  await until(() => got ?? failed, ms, what);
  if (failed) throw failed;
  return got!.v;
}

/** What {@link checkLedgers} counted. */
export interface LedgerCheck {
  calls: number;
  /** Records by state. */
  states: Record<string, number>;
}

/**
 * Checks every call record of the database against the simulated devices' at-most-once ledgers (`ledger:
 * true`): one record per accepted call and none other; each ended, with its device's own outcome (the same
 * state, error type and output), so a call the device never ran is lost; and no device ran a call twice, or one
 * no node accepted for it. `accepted` maps each call id a node answered 2xx for to its device.
 */
export async function checkLedgers(db: pg.Pool, accepted: Map<string, SimDevice>, sims: SimDevice[]): Promise<LedgerCheck> {
  const rows = (await db.query<{ call_id: string; device_id: string; state: string; outcome: string | null }>(`SELECT call_id, device_id, state, outcome FROM bridge_calls`)).rows;
  const states: Record<string, number> = {};
  for (const r of rows) {
    const sim = accepted.get(r.call_id);
    assert.ok(sim, `a record no node accepted: ${r.call_id}`);
    assert.equal(r.device_id, sim.o.identity.device_id);
    assert.ok(r.outcome, `call ${r.call_id} never ended (${r.state})`);
    const mine = sim.outcome(r.call_id);
    assert.ok(mine, `call ${r.call_id} (${r.state}) was never run by its device: lost`);
    const o = JSON.parse(r.outcome) as Outcome;
    assert.deepEqual([r.state, o.error?.type ?? null, o.output ?? null], [mine.state, mine.error?.type ?? null, mine.output ?? null], `call ${r.call_id}: the record says what the device did`);
    states[r.state] = (states[r.state] ?? 0) + 1;
  }
  assert.equal(rows.length, accepted.size, 'one record per accepted call');
  let runs = 0;
  for (const sim of sims) {
    runs += sim.executed.length;
    assert.equal(new Set(sim.executed).size, sim.executed.length, `${sim.o.identity.device_id} ran a call twice: ${sim.executed.join(' ')}`);
    for (const id of sim.executed) assert.equal(accepted.get(id), sim, `${sim.o.identity.device_id} ran ${id}, which no node accepted for it`);
  }
  assert.equal(runs, accepted.size, 'every accepted call ran exactly once');
  return { calls: rows.length, states };
}

/** Runs `fn` over `items`, `n` at a time. */
export async function inLanes<T>(items: T[], n: number, fn: (x: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

/** A small pool on the database at `url` for a test's own queries, which outlives a restart of PostgreSQL. */
export function adminPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  // A connection dropped while idle (PostgreSQL stopped) is replaced at the next query.
  pool.on('error', () => undefined);
  return pool;
}
