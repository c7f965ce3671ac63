/**
 * The node registry (src/bridge/cluster/node.ts, config-digest.ts): nodes join one private PostgreSQL 15 with
 * their config's digest; a node whose shared config differs refuses to join; the heartbeat and `GET /health`'s
 * cluster part.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger, type Logger } from '../../src/base/logger.js';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import { configDigest, differingKeys } from '../../src/bridge/cluster/config-digest.js';
import { ClusterConfigMismatchError, ClusterNode, ClusterNodeIdTakenError } from '../../src/bridge/cluster/node.js';
import { PgBridgeStore } from '../../src/bridge/store/pg-store.js';
import { SqliteBridgeStore } from '../../src/bridge/store/sqlite-store.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/stack.js';
import { until } from '../helpers/wait.js';
import { join } from 'node:path';
import { rmSync } from 'node:fs';

let server: PrivatePostgres;
let n = 0;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

/** A node's config file as parsed (store and cluster keys aside: they are the node's own). */
function config(over: Record<string, unknown> = {}) {
  return normalizeBridgeConfig({
    data_dir: '/tmp/unused',
    runtime_tokens: { 'rt-secret': { workspace_id: 'ws_a', name: 'Agent' } },
    device_tokens: { 'dev-secret': { workspace_id: 'ws_a', user_id: 'u1', device_id: 'dev_1' } },
    min_client_version: '0.1.0',
    ...over,
  });
}

/** Stores on one fresh database, one per node; closed after `fn`. */
async function withStores(count: number, fn: (stores: PgBridgeStore[]) => Promise<void>): Promise<void> {
  const url = server.createDatabase(`nodes${process.pid}_${++n}`);
  const stores: PgBridgeStore[] = [];
  try {
    for (let i = 0; i < count; i++) stores.push(await PgBridgeStore.open(url, { max: 2 }));
    await fn(stores);
  } finally {
    await Promise.all(stores.map((s) => s.close()));
  }
}

const node = (store: PgBridgeStore, nodeId: string, c = config(), over: { heartbeatMs?: number; liveMs?: number; takenWaitMs?: number; onIdTaken?: (e: ClusterNodeIdTakenError) => void } = {}) =>
  new ClusterNode({ store, nodeId, config: configDigest(c), log: silentLogger(), ...over });

test('the config digest is over the shared keys\' JCS form: key order and other keys do not matter; each shared key does', () => {
  const base = configDigest(config());
  const reordered = configDigest(normalizeBridgeConfig({
    min_client_version: '0.1.0',
    device_tokens: { 'dev-secret': { device_id: 'dev_1', user_id: 'u1', workspace_id: 'ws_a' } },
    runtime_tokens: { 'rt-secret': { name: 'Agent', workspace_id: 'ws_a' } },
    data_dir: '/elsewhere',
    heartbeat_ms: 5000,
    listen: { port: 9999 },
  }));
  assert.equal(reordered.digest, base.digest, 'same shared config, other key order and other node-local keys');
  assert.match(base.digest, /^[0-9a-f]{64}$/);
  const cases: [string, Record<string, unknown>][] = [
    ['runtime_tokens', { runtime_tokens: { 'rt-other': { workspace_id: 'ws_a', name: 'Agent' } } }],
    ['device_tokens', { device_tokens: {} }],
    ['users', { users: [{ id: 'u1', password_hash: 'scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g', workspaces: ['ws_a'] }] }],
    ['min_client_version', { min_client_version: '0.2.0' }],
    ['public_url', { public_url: 'https://bridge.example.test' }],
  ];
  for (const [key, over] of cases) {
    const other = configDigest(config(over));
    assert.notEqual(other.digest, base.digest, key);
    assert.deepEqual(differingKeys(base, other), [key]);
  }
  assert.ok(!JSON.stringify(base).includes('secret'), 'no token in the digests');
});

test('a node with a different runtime_tokens refuses to join, naming the key and the nodes; nothing of it is written', () =>
  withStores(3, async ([s1, s2, s3]) => {
    await node(s1!, 'node_a').join();
    await node(s2!, 'node_b').join();
    const odd = node(s3!, 'node_c', config({ runtime_tokens: { 'rt-other': { workspace_id: 'ws_a', name: 'Agent' } } }));
    await assert.rejects(odd.join(), (e: unknown) => {
      assert.ok(e instanceof ClusterConfigMismatchError);
      assert.equal(e.code, 'cluster_config_mismatch');
      assert.deepEqual(e.differing, [{ node_id: 'node_a', keys: ['runtime_tokens'] }, { node_id: 'node_b', keys: ['runtime_tokens'] }]);
      assert.match(e.message, /"runtime_tokens"/);
      return true;
    });
    assert.deepEqual((await s1!.clusterNodes()).map((x) => x.node_id), ['node_a', 'node_b']);
    // A node with the same shared config (other node-local keys) joins.
    await node(s3!, 'node_c', config({ data_dir: '/other', heartbeat_ms: 1000 })).join();
    assert.deepEqual((await s1!.clusterNodes()).map((x) => x.node_id), ['node_a', 'node_b', 'node_c']);
  }));

test('only live nodes count: once the others have stopped beating, a new config may join (a whole-cluster restart)', () =>
  withStores(2, async ([s1, s2]) => {
    await node(s1!, 'node_a').join();
    const changed = config({ min_client_version: '0.3.0' });
    await assert.rejects(node(s2!, 'node_b', changed, { liveMs: 60_000 }).join(), ClusterConfigMismatchError);
    // node_a was last seen "long ago" for a node that counts nodes silent for 1 ms as gone.
    await until(async () => {
      try {
        await node(s2!, 'node_b', changed, { liveMs: 1 }).join();
        return true;
      } catch (e) {
        if (e instanceof ClusterConfigMismatchError) return false;
        throw e;
      }
    }, 5_000, 'node_b joining once node_a is not live');
  }));

test('two nodes with different configs joining at once: exactly one joins', () =>
  withStores(2, async ([s1, s2]) => {
    const results = await Promise.allSettled([
      node(s1!, 'node_a').join(),
      node(s2!, 'node_b', config({ min_client_version: '0.9.0' })).join(),
    ]);
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, JSON.stringify(results.map((r) => r.status)));
    assert.equal((await s1!.clusterNodes()).length, 1);
  }));

test('the heartbeat renews last_seen and the node\'s session leases; GET /health\'s cluster part lists the nodes; leaving removes the row', () =>
  withStores(2, async ([s1, s2]) => {
    const a = node(s1!, 'node_a', config(), { heartbeatMs: 50, liveMs: 60_000 });
    const b = node(s2!, 'node_b');
    await a.join();
    await b.join();
    await s1!.claimSession('ws_a', 'dev_1', 'node_a', 0);
    const before = (await b.health()).cluster.nodes.find((x) => x.node_id === 'node_a')!.last_seen;
    a.startHeartbeat();
    await until(async () => (await b.health()).cluster.nodes.find((x) => x.node_id === 'node_a')!.last_seen > before, 5_000, 'node_a\'s last_seen to move');
    await until(async () => (await s2!.session('ws_a', 'dev_1'))?.lapsed === false, 5_000, 'the heartbeat renewing node_a\'s session lease');
    const h = await b.health();
    assert.equal(h.node_id, 'node_b');
    assert.deepEqual(h.cluster.nodes.map((x) => x.node_id), ['node_a', 'node_b']);
    for (const x of h.cluster.nodes) assert.ok(!Number.isNaN(Date.parse(x.last_seen)), x.last_seen);
    assert.deepEqual(Object.keys(h.cluster.nodes[0]!).sort(), ['last_seen', 'node_id'], 'no config digest in /health');
    await a.leave();
    assert.deepEqual((await b.health()).cluster.nodes.map((x) => x.node_id), ['node_b']);
  }));

test('a second process with a live node\'s id waits for it to lapse, then refuses: nothing of it is written', () =>
  withStores(2, async ([s1, s2]) => {
    const a = node(s1!, 'node_a', config(), { heartbeatMs: 50, liveMs: 60_000 });
    await a.join();
    a.startHeartbeat();
    const row = async () => (await s1!.clusterNodes()).find((x) => x.node_id === 'node_a')!;
    const before = await row();
    const twin = node(s2!, 'node_a', config(), { heartbeatMs: 50, liveMs: 60_000, takenWaitMs: 300 });
    await assert.rejects(twin.join(), (e: unknown) => {
      assert.ok(e instanceof ClusterNodeIdTakenError);
      assert.equal(e.code, 'cluster_node_id_taken');
      assert.match(e.message, /"node_a"/);
      return true;
    });
    assert.equal((await row()).started_at, before.started_at, 'the live node\'s row is untouched');
    // The live node goes on beating: its row is still its own.
    const seen = (await row()).last_seen;
    await until(async () => (await row()).last_seen > seen, 5_000, 'node_a still beating');
    await a.leave();
    assert.deepEqual(await s1!.clusterNodes(), []);
  }));

test('a node restarted after a crash (its old row still live) waits for the old row to lapse, then joins', () =>
  withStores(2, async ([s1, s2]) => {
    // The crashed process: joined, beat, then nothing (no leave).
    await node(s1!, 'node_a', config(), { heartbeatMs: 50, liveMs: 400 }).join();
    const old = (await s1!.clusterNodes())[0]!;
    const restarted = node(s2!, 'node_a', config(), { heartbeatMs: 50, liveMs: 400 });
    await restarted.join();
    const fresh = (await s1!.clusterNodes())[0]!;
    // Both times are the database's: the new row was written only once the old one had lapsed.
    assert.ok(Date.parse(fresh.started_at) >= Date.parse(old.last_seen) + 399, `joined at ${fresh.started_at}, the old row was last seen at ${old.last_seen}`);
    await restarted.beat();
    assert.deepEqual((await s1!.clusterNodes()).map((x) => x.node_id), ['node_a']);
    await restarted.leave();
    assert.deepEqual(await s1!.clusterNodes(), []);
  }));

test('a node whose id another process took while it was silent stops beating, tells its owner, and leaves the other\'s row alone', () =>
  withStores(2, async ([s1, s2]) => {
    const taken: ClusterNodeIdTakenError[] = [];
    const frozen = node(s1!, 'node_a', config(), { heartbeatMs: 50, liveMs: 200, onIdTaken: (e) => void taken.push(e) });
    await frozen.join();
    // While it is frozen (no heartbeat) its row lapses and another process joins as node_a.
    const other = node(s2!, 'node_a', config(), { heartbeatMs: 50, liveMs: 200 });
    await other.join();
    const othersRow = (await s2!.clusterNodes())[0]!;
    await frozen.beat();
    assert.equal(taken.length, 1, 'the owner is told');
    assert.equal(taken[0]!.code, 'cluster_node_id_taken');
    const now = (await s2!.clusterNodes())[0]!;
    assert.equal(now.started_at, othersRow.started_at, 'the frozen node did not write the other\'s row');
    await frozen.leave();
    assert.deepEqual((await s2!.clusterNodes()).map((x) => x.started_at), [othersRow.started_at], 'leaving removes only its own row');
    await other.leave();
    assert.deepEqual(await s2!.clusterNodes(), []);
  }));

test('one process on SQLite is a cluster of one: it joins and is its only node', async () => {
  const dir = tempDir();
  const store = SqliteBridgeStore.open(join(dir, 'bridge.sqlite'));
  try {
    const solo = new ClusterNode({ store, nodeId: 'solo', config: configDigest(config()), log: silentLogger() });
    await solo.join();
    await solo.beat();
    assert.deepEqual((await solo.health()).cluster.nodes.map((x) => x.node_id), ['solo']);
    await solo.leave();
    assert.deepEqual((await solo.health()).cluster.nodes, []);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('PostgreSQL down: the heartbeat fails and says so, and resumes by itself once it is back', async () => {
  const pgOwn = await startPostgres();
  const url = pgOwn.createDatabase('beat');
  const store = await PgBridgeStore.open(url, { max: 2 });
  const errors: string[] = [];
  const quiet = silentLogger();
  const log: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: (_o, msg) => void errors.push(msg ?? ''), child: () => quiet };
  const a = new ClusterNode({ store, nodeId: 'node_a', config: configDigest(config()), log, heartbeatMs: 30 });
  try {
    await a.join();
    a.startHeartbeat();
    const lastSeen = async () => (await store.clusterNodes())[0]?.last_seen ?? '';
    pgOwn.down();
    try {
      await until(() => errors.includes('the cluster heartbeat failed'), 10_000, 'the failed heartbeat logged');
    } finally {
      pgOwn.up();
    }
    const after = await until(async () => {
      try {
        return await lastSeen();
      } catch {
        return '';
      }
    }, 20_000, 'the store answering again');
    await until(async () => (await lastSeen()) > after, 20_000, 'the heartbeat moving last_seen again');
  } finally {
    await a.leave().catch(() => undefined);
    await store.close();
    pgOwn.stop();
  }
});
