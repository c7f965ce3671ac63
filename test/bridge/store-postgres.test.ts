/**
 * The store suite (test/bridge/store-suite.ts) on PostgreSQL, on a private instance for this run
 * (test/helpers/postgres.ts), and the migration runner on databases that hold rows.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { BRIDGE_PG_SCHEMA, PgBridgeStore, StoreUnavailableError } from '../../src/bridge/store/pg-store.js';
import { PgRateLimits } from '../../src/bridge/store/pg-rate-limits.js';
import { PgLoginStore } from '../../src/bridge/store/pg-login-store.js';
import { PgBlobLedger } from '../../src/bridge/cluster/pg-blob-ledger.js';
import { PgMcpSessions } from '../../src/bridge/store/pg-mcp-sessions.js';
import { migratePg, pgSchemaVersion, PgMigrationError, readPgMigrations } from '../../src/storage/pg-migrate.js';
import { SchemaTooNewError } from '../../src/storage/migrations.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { aCall, storeSuite } from './store-suite.js';

let server: PrivatePostgres;
let n = 0;
/** A fresh database on the run's instance. */
const freshDb = () => server.createDatabase(`t${process.pid}_${++n}`);

before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

storeSuite('postgres', async () => {
  const url = freshDb();
  return { open: () => PgBridgeStore.open(url, { max: 4 }), remove: async () => undefined };
});

/** Runs `fn` with a pool on a fresh database, ending the pool afterwards. */
async function withPool(fn: (pool: pg.Pool, url: string) => Promise<void>): Promise<void> {
  const url = freshDb();
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    await fn(pool, url);
  } finally {
    await pool.end();
  }
}

/** A folder of migration files (name → SQL), removed by the caller. */
function migrationDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'aios-pgmig-'));
  for (const [name, sql] of Object.entries(files)) writeFileSync(join(dir, name), sql);
  return dir;
}

test('postgres: the bridge\'s migrations are files numbered from 0001, and 0001 holds the idempotency key', () => {
  const ms = readPgMigrations(BRIDGE_PG_SCHEMA.dir);
  assert.ok(ms.length >= 1);
  assert.deepEqual(ms.map((m) => m.version), ms.map((_, i) => i + 1));
  assert.match(ms[0]!.sql, /CONSTRAINT bridge_calls_idempotency PRIMARY KEY \(workspace_id, call_id\)/);
});

test('postgres: migrating again is a no-op, and rows written at the newest version survive it and a restart of the store', () =>
  withPool(async (pool, url) => {
    const first = await PgBridgeStore.open(url);
    assert.equal(await pgSchemaVersion(pool, 'bridge'), readPgMigrations(BRIDGE_PG_SCHEMA.dir).length);
    await first.insertCall(aCall());
    await first.upsertDevice({ workspace_id: 'ws_a', user_id: 'u1', device_id: 'dev_1', name: 'kept' });
    await first.close();
    assert.deepEqual(await migratePg(pool, BRIDGE_PG_SCHEMA), [], 'nothing left to apply');
    const again = await PgBridgeStore.open(url);
    try {
      assert.deepEqual(await again.getCall('ws_a', 'c1'), aCall());
      assert.equal((await again.getDevice('ws_a', 'dev_1'))?.name, 'kept');
      const rows = await pool.query(`SELECT version, name FROM schema_version WHERE schema = 'bridge' ORDER BY version`);
      assert.deepEqual(rows.rows, readPgMigrations(BRIDGE_PG_SCHEMA.dir).map((m) => ({ version: m.version, name: m.name })), 'each version recorded once');
    } finally {
      await again.close();
    }
  }));

test('postgres runner: a later migration applies over a database holding rows, and the rows are intact', () =>
  withPool(async (pool) => {
    const dir = migrationDir({
      '0001_things.sql': `CREATE TABLE things (id text PRIMARY KEY, body text NOT NULL);`,
      '0002_things_size.sql': `ALTER TABLE things ADD COLUMN size integer; UPDATE things SET size = length(body);`,
    });
    try {
      const schema = { name: 'things', dir };
      assert.deepEqual(await migratePg(pool, schema, { upTo: 1 }), [1]);
      await pool.query(`INSERT INTO things (id, body) VALUES ('a', 'hello'), ('b', 'ü')`);
      assert.deepEqual(await migratePg(pool, schema), [2]);
      assert.deepEqual((await pool.query(`SELECT id, body, size FROM things ORDER BY id`)).rows, [{ id: 'a', body: 'hello', size: 5 }, { id: 'b', body: 'ü', size: 1 }]);
      assert.equal(await pgSchemaVersion(pool, 'things'), 2);
      assert.equal(await pgSchemaVersion(pool, 'bridge'), 0, 'each schema keeps its own version');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }));

test('postgres runner: a failing migration is rolled back whole and the database stays at the version before it', () =>
  withPool(async (pool) => {
    const dir = migrationDir({
      '0001_things.sql': `CREATE TABLE things (id text PRIMARY KEY);`,
      '0002_broken.sql': `CREATE TABLE half (x int); INSERT INTO things (id) VALUES (NULL);`,
    });
    try {
      await assert.rejects(migratePg(pool, { name: 'things', dir }), (e: unknown) => e instanceof PgMigrationError && e.from === 1 && e.migration.version === 2);
      assert.equal(await pgSchemaVersion(pool, 'things'), 1);
      assert.equal((await pool.query(`SELECT to_regclass('half') AS t`)).rows[0].t, null, 'the failed migration left nothing');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }));

test('postgres runner: a database from a newer build is refused before anything is written; misnumbered files are refused', () =>
  withPool(async (pool) => {
    const two = migrationDir({ '0001_a.sql': `CREATE TABLE a (x int);`, '0002_b.sql': `CREATE TABLE b (x int);` });
    const one = migrationDir({ '0001_a.sql': `CREATE TABLE a (x int);` });
    const gap = migrationDir({ '0001_a.sql': ``, '0003_c.sql': `` });
    try {
      await migratePg(pool, { name: 'ab', dir: two });
      await assert.rejects(migratePg(pool, { name: 'ab', dir: one }), SchemaTooNewError);
      assert.equal(await pgSchemaVersion(pool, 'ab'), 2);
      assert.throws(() => readPgMigrations(gap), /numbered 0001, 0002/);
    } finally {
      for (const d of [two, one, gap]) rmSync(d, { recursive: true, force: true });
    }
  }));

test('postgres runner: nodes migrating at once apply each migration once', () =>
  withPool(async (pool, url) => {
    const others = [new pg.Pool({ connectionString: url, max: 2 }), new pg.Pool({ connectionString: url, max: 2 })];
    try {
      const applied = await Promise.all([pool, ...others].map((p) => migratePg(p, BRIDGE_PG_SCHEMA)));
      // Numerically: from 0010 on, a plain sort() puts 10 before 2.
      assert.deepEqual(applied.flat().sort((x, y) => x - y), readPgMigrations(BRIDGE_PG_SCHEMA.dir).map((m) => m.version));
    } finally {
      await Promise.all(others.map((p) => p.end()));
    }
  }));

test('postgres: the sent mark commits without waiting for its WAL flush, and only it: the connection\'s next commits wait again', async () => {
  // One connection, so the marks and the commits after them share it (a setting leaking past the mark's
  // transaction would stay on it). WAL writes counted by pg_stat_wal (fsync is off here, writes still count):
  // a synchronous commit writes the WAL up to its record itself, an asynchronous one leaves that to the WAL writer.
  const store = await PgBridgeStore.open(freshDb(), { max: 1 });
  const N = 40;
  try {
    const { epoch } = await store.claimSession('ws_a', 'dev_1', 'node_a', 60_000);
    for (let i = 0; i < N; i++) await store.insertCall(aCall({ call_id: `c${i}` }));
    const walWrites = async () => {
      // This backend's pending statistics are flushed when the statement ends, before the next reads them.
      await store.pool.query('SELECT pg_stat_force_next_flush()');
      return Number((await store.pool.query<{ wal_write: string }>('SELECT wal_write FROM pg_stat_wal')).rows[0]!.wal_write);
    };
    let before = await walWrites();
    for (let i = 0; i < N; i++) assert.deepEqual(await store.markSent([{ workspace_id: 'ws_a', device_id: 'dev_1', epoch, call_id: `c${i}` }]), ['written']);
    const marks = (await walWrites()) - before;
    assert.equal((await store.pool.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit, 'on', 'the connection\'s setting after the marks');
    before = await walWrites();
    for (let i = 0; i < N; i++) await store.saveCall(aCall({ call_id: `c${i}`, sent: true, state: 'running' }));
    const saves = (await walWrites()) - before;
    assert.ok(saves >= N, `each synchronous commit after the marks wrote its WAL: ${saves} writes for ${N} commits`);
    assert.ok(marks < N / 4, `the marks left their WAL to the WAL writer: ${marks} writes for ${N} marks`);
    assert.equal((await store.getCall('ws_a', `c${N - 1}`))?.sent, true);
  } finally {
    await store.close();
  }
});

test('postgres: two nodes inserting the same call at once: exactly one insert wins, the record is the winner\'s', async () => {
  const url = freshDb();
  const nodes = [await PgBridgeStore.open(url, { max: 4 }), await PgBridgeStore.open(url, { max: 4 })];
  try {
    const tries = Array.from({ length: 20 }, (_, i) => nodes[i % 2]!.insertCall(aCall({ args_digest: `sha256:${i}` })));
    const won = (await Promise.all(tries)).map((ok, i) => (ok ? i : -1)).filter((i) => i >= 0);
    assert.equal(won.length, 1, `one insert wins, not ${won.length}`);
    assert.equal((await nodes[1]!.getCall('ws_a', 'c1'))?.args_digest, `sha256:${won[0]}`);
  } finally {
    await Promise.all(nodes.map((n) => n.close()));
  }
});

test('postgres: each migration after 0001 applies over a version-1 database holding rows, and the rows are intact', () =>
  withPool(async (pool, url) => {
    assert.deepEqual(await migratePg(pool, BRIDGE_PG_SCHEMA, { upTo: 1 }), [1]);
    await pool.query(
      `INSERT INTO bridge_calls (workspace_id, call_id, device_id, function, args_digest, params, state, timeline, deadline_ms, created_at, updated_at)
       VALUES ('ws_a', 'c1', 'dev_1', 'files.read', 'sha256:abc', '{}', 'submitted', '[]', 1, '2026-12-04T10:00:00.000Z', '2026-12-04T10:00:00.000Z')`,
    );
    await pool.query(`INSERT INTO bridge_devices (workspace_id, device_id, user_id, name) VALUES ('ws_a', 'dev_1', 'u1', 'kept')`);
    await pool.query(
      `INSERT INTO bridge_devices (workspace_id, device_id, user_id, functions) VALUES ('ws_a', 'dev_2', 'u2', $1)`,
      [JSON.stringify([{ id: 'a.one', timeout_ms_default: 5000 }, { id: 'a.two' }, { timeout_ms_default: 1 }, { id: 'a.one', timeout_ms_default: 9 }])],
    );
    const newest = readPgMigrations(BRIDGE_PG_SCHEMA.dir).length;
    assert.deepEqual(await migratePg(pool, BRIDGE_PG_SCHEMA), Array.from({ length: newest - 1 }, (_, i) => i + 2));
    const s = await PgBridgeStore.open(url);
    try {
      assert.equal((await s.getCall('ws_a', 'c1'))?.state, 'submitted');
      assert.equal((await s.getDevice('ws_a', 'dev_1'))?.name, 'kept');
      assert.ok((await s.claimSession('ws_a', 'dev_1', 'node_a', 1000)).epoch > 0, 'the new tables work');
      // 0004: the call's deadline (1 ms after the epoch) as a time, and the sweeper's claim reads it.
      assert.equal(((await pool.query(`SELECT deadline_at FROM bridge_calls WHERE call_id = 'c1'`)).rows[0] as { deadline_at: Date }).deadline_at.getTime(), 1);
      assert.deepEqual((await s.claimExpiredCalls(0, 10)).map((c) => c.call_id), ['c1']);
      // 0005: a call's latest progress note, none on an old row; written and read back with the record.
      const c1 = (await s.getCall('ws_a', 'c1'))!;
      assert.equal(c1.progress, undefined);
      await s.saveCall({ ...c1, progress: { call_id: 'c1', seq: 2, progress: 1, total: 4 } });
      assert.deepEqual((await s.getCall('ws_a', 'c1'))?.progress, { call_id: 'c1', seq: 2, progress: 1, total: 4 });
      // 0008: the shared rate limits; 0009: the sign-in tables.
      assert.equal(await new PgRateLimits(s.pool).buckets('runtime', 1, 1).take('rt'), 0);
      const login = new PgLoginStore(s.pool);
      await login.syncUsers([{ id: 'usr_a', name: 'a', password_hash: 'x', workspaces: ['ws_a'] }]);
      assert.equal(await login.isMember('usr_a', 'ws_a'), true);
      // 0010: the blob records and each workspace's quota: a reservation past the quota is refused, one within it held.
      const ledger = new PgBlobLedger({ pool: s.pool, nodeId: 'node_a' });
      try {
        assert.equal(await ledger.reserve('b_1', 'ws_a', 10, 5), false);
        assert.equal(await ledger.reserve('b_1', 'ws_a', 5, 5), true);
        assert.equal(await ledger.used('ws_a'), 5);
      } finally {
        ledger.close();
      }
      // 0012: the functions' defaults kept beside a list written before it (the first descriptor of an id counts).
      assert.deepEqual(await s.callTarget('ws_a', 'dev_2', 'a.one'), { user_id: 'u2', timeout_ms_default: 5000 });
      assert.deepEqual(await s.callTarget('ws_a', 'dev_2', 'a.two'), { user_id: 'u2' });
      assert.deepEqual(await s.callTarget('ws_a', 'dev_2', 'nope'), { user_id: 'u2' });
      assert.deepEqual(await s.callTarget('ws_a', 'dev_1', 'a.one'), { user_id: 'u1' });
      // 0011: MCP sessions, their events and the workspace handles.
      const mcp = new PgMcpSessions(s.pool);
      await mcp.save({ session_id: 's1', token_digest: 'd', workspace_id: 'ws_a', device_id: null, client: {} }, 60);
      assert.equal((await mcp.renew('s1', 60))?.workspace_id, 'ws_a');
      assert.deepEqual([...(await mcp.mcpHandles('ws_a', ['dev_1']))], [['dev_1', 'd1']]);
    } finally {
      await s.close();
    }
  }));

test('postgres: two nodes claiming one device at once: every claim gets its own epoch and names the one it replaced', async () => {
  const url = freshDb();
  const nodes = [await PgBridgeStore.open(url, { max: 4 }), await PgBridgeStore.open(url, { max: 4 })];
  try {
    const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => nodes[i % 2]!.claimSession('ws_a', 'dev_1', `node_${i % 2}`, 60_000)));
    const epochs = claims.map((c) => c.epoch).sort((a, b) => a - b);
    assert.equal(new Set(epochs).size, 20, 'no two claims share an epoch');
    // The claims form one chain: exactly one replaced nothing, and each other replaced the one just before it.
    assert.equal(claims.filter((c) => c.previous === null).length, 1);
    const replaced = claims.flatMap((c) => (c.previous ? [c.previous.epoch] : [])).sort((a, b) => a - b);
    assert.deepEqual(replaced, epochs.slice(0, -1));
    assert.equal((await nodes[0]!.session('ws_a', 'dev_1'))?.epoch, epochs.at(-1), 'the newest claim holds the device');
  } finally {
    await Promise.all(nodes.map((n) => n.close()));
  }
});

test('a server that accepts and never answers: opening the store fails within its connect limit instead of hanging', async () => {
  const { createServer } = await import('node:net');
  const held: import('node:net').Socket[] = [];
  const silent = createServer((sock) => void held.push(sock));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  const port = (silent.address() as import('node:net').AddressInfo).port;
  try {
    await assert.rejects(PgBridgeStore.open(`postgres://postgres@127.0.0.1:${port}/x`, { connectTimeoutMs: 300 }), /timeout/i);
  } finally {
    for (const s of held) s.destroy();
    silent.close();
  }
});

test('a server that stops answering mid-run (its backend frozen): the store call fails at the query limit, and the next call works on a new connection', async () => {
  const store = await PgBridgeStore.open(freshDb(), { max: 1, queryTimeoutMs: 500 });
  let frozen: number | undefined;
  try {
    const pid = (await store.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    process.kill(pid, 'SIGSTOP');
    frozen = pid;
    // Said as the database out of reach (503 store_unavailable on the runtime API), the time limit as its cause.
    await assert.rejects(store.clusterNodes(), (e: unknown) => e instanceof StoreUnavailableError && /timeout/i.test(String((e.cause as Error).message)));
    process.kill(pid, 'SIGCONT');
    frozen = undefined;
    assert.deepEqual(await store.clusterNodes(), [], 'the next call is answered');
    const after = (await store.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    assert.notEqual(after, pid, 'the timed-out connection was dropped, not reused');
  } finally {
    if (frozen !== undefined) process.kill(frozen, 'SIGCONT');
    await store.close();
  }
});
