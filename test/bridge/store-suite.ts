/**
 * The one test suite every implementation of the bridge's store passes (SQLite and PostgreSQL, issue 34):
 * `storeSuite(name, newPlace)` declares its tests; each test gets a fresh, empty place to open stores on.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import type { AsyncBridgeStore } from '../../src/bridge/store/async-store.js';
import type { PgBridgeStore } from '../../src/bridge/store/pg-store.js';
import { SqliteBridgeStore } from '../../src/bridge/store/sqlite-store.js';
import { cardDigest, deviceKey, type RefusedHello, type StoredCall } from '../../src/bridge/store.js';
import { until } from '../helpers/wait.js';

/** Where a store lives (a SQLite file, a PostgreSQL database): opened as often as a test likes. */
export interface StorePlace {
  open(): Promise<AsyncBridgeStore>;
  remove(): Promise<void>;
}

/** A call as the call path inserts it: submitted, not yet sent, no outcome. */
export function aCall(over: Partial<StoredCall> = {}): StoredCall {
  return {
    call_id: 'c1',
    workspace_id: 'ws_a',
    device_id: 'dev_1',
    function: 'files.read',
    state: 'submitted',
    created_at: '2026-12-04T10:00:00.000Z',
    updated_at: '2026-12-04T10:00:00.000Z',
    timeline: [{ state: 'submitted', at: '2026-12-04T10:00:00.000Z' }],
    args_digest: 'sha256:abc',
    params: { call_id: 'c1', function: 'files.read', args: { path: '/tmp/ü x', n: 3, nested: { z: 1, a: [true, null] } }, deadline_ms: 30_000 } as unknown as StoredCall['params'],
    // An absolute time in ms: past 2^31, so a 32-bit column would not hold it.
    deadline_ms: 1_796_000_000_123,
    bridge_outcome: false,
    sent: false,
    ...over,
  };
}

const refused: RefusedHello = { type: 'client_outdated', message: 'too old', at: '2026-12-04T10:00:00.000Z', client_version: '0.0.1', minimum: '0.1.0', protocol_version: '1.2' };

/** Hears what the store's `notify` sends on `channels` (SQLite: this process's listeners; PostgreSQL: LISTEN). */
async function listenTo(s: AsyncBridgeStore, channels: string[], fn: (channel: string, payload: string) => void): Promise<() => Promise<void>> {
  if (s instanceof SqliteBridgeStore) {
    const stop = s.listen((channel, payload) => channels.includes(channel) && fn(channel, payload));
    return async () => void stop();
  }
  const client = new pg.Client({ connectionString: (s as PgBridgeStore).pool.options.connectionString });
  await client.connect();
  client.on('notification', (m) => fn(m.channel, m.payload ?? ''));
  for (const c of channels) await client.query(`LISTEN ${c}`);
  return () => client.end();
}

/** Declares the suite's tests for one implementation. */
export function storeSuite(name: string, newPlace: () => Promise<StorePlace>): void {
  /** Runs `fn` with a store on a fresh place, then closes it and removes the place. */
  const withStore = (fn: (s: AsyncBridgeStore, place: StorePlace) => Promise<void>) => async () => {
    const place = await newPlace();
    const s = await place.open();
    try {
      await fn(s, place);
    } finally {
      await s.close().catch(() => undefined);
      await place.remove();
    }
  };

  test(`${name}: a call reads back exactly as inserted`, withStore(async (s) => {
    const c = aCall();
    assert.equal(await s.insertCall(c), true);
    assert.deepEqual(await s.getCall('ws_a', 'c1'), c);
    assert.equal(await s.getCall('ws_b', 'c1'), undefined, 'a call id means nothing without its workspace');
  }));

  test(`${name}: idempotency is the (workspace_id, call_id) key: a second insert changes nothing`, withStore(async (s) => {
    assert.equal(await s.insertCall(aCall()), true);
    assert.equal(await s.insertCall(aCall({ args_digest: 'sha256:other', device_id: 'dev_2' })), false);
    assert.equal((await s.getCall('ws_a', 'c1'))?.args_digest, 'sha256:abc', 'the first call stays');
    assert.equal(await s.insertCall(aCall({ workspace_id: 'ws_b' })), true, 'the same call id in another workspace is another call');
    assert.equal((await s.openCalls()).length, 2);
  }));

  test(`${name}: saving a call writes its state, outcome, timeline and resolution`, withStore(async (s) => {
    await s.insertCall(aCall());
    const done = aCall({
      state: 'succeeded',
      sent: true,
      updated_at: '2026-12-04T10:00:02.000Z',
      timeline: [{ state: 'submitted', at: '2026-12-04T10:00:00.000Z' }, { state: 'running', at: '2026-12-04T10:00:01.000Z', derived: true }, { event: 'device_offline', at: '2026-12-04T10:00:01.500Z' }, { state: 'succeeded', at: '2026-12-04T10:00:02.000Z' }],
      outcome: { state: 'succeeded', result: { ok: true } } as unknown as StoredCall['outcome'],
      resolved_from: { state: 'unknown', at: '2026-12-04T10:00:01.000Z' },
      device_outcome: { state: 'failed' } as unknown as StoredCall['outcome'],
      bridge_outcome: true,
    });
    await s.saveCall(done);
    assert.deepEqual(await s.getCall('ws_a', 'c1'), done);
    // Fields a save does not own stay as inserted.
    await s.saveCall({ ...done, args_digest: 'changed', function: 'changed' });
    assert.equal((await s.getCall('ws_a', 'c1'))?.args_digest, 'sha256:abc');
  }));

  test(`${name}: open calls are the ones with no outcome, for one device or all; findByDevice needs the right workspace and device`, withStore(async (s) => {
    await s.insertCall(aCall({ call_id: 'a' }));
    await s.insertCall(aCall({ call_id: 'b', device_id: 'dev_2' }));
    await s.insertCall(aCall({ call_id: 'c' }));
    await s.saveCalls([aCall({ call_id: 'c', state: 'failed', outcome: { state: 'failed' } as unknown as StoredCall['outcome'] })]);
    assert.deepEqual((await s.openCalls()).map((c) => c.call_id).sort(), ['a', 'b']);
    assert.deepEqual((await s.openCalls('dev_1')).map((c) => c.call_id), ['a']);
    assert.equal((await s.findByDevice('ws_a', 'dev_2', 'b'))?.call_id, 'b');
    assert.equal(await s.findByDevice('ws_a', 'dev_1', 'b'), undefined, 'another device\'s call is not found');
    assert.equal(await s.findByDevice('ws_b', 'dev_2', 'b'), undefined, 'another workspace\'s device is another device');
  }));

  test(`${name}: saveCalls saves every call it is given`, withStore(async (s) => {
    for (const id of ['x', 'y']) await s.insertCall(aCall({ call_id: id }));
    await s.saveCalls([aCall({ call_id: 'x', state: 'running' }), aCall({ call_id: 'y', state: 'accepted' })]);
    assert.equal((await s.getCall('ws_a', 'x'))?.state, 'running');
    assert.equal((await s.getCall('ws_a', 'y'))?.state, 'accepted');
  }));

  test(`${name}: unresolved unknowns are the bridge's own unknowns since the window, not yet resolved`, withStore(async (s) => {
    const unknown = (id: string, over: Partial<StoredCall> = {}) => aCall({ call_id: id, state: 'unknown', bridge_outcome: true, sent: true, outcome: { state: 'unknown' } as unknown as StoredCall['outcome'], updated_at: '2026-12-04T10:05:00.000Z', ...over });
    const all = [
      unknown('mine'),
      unknown('device_said', { bridge_outcome: false }),
      unknown('resolved', { resolved_from: { state: 'unknown', at: '2026-12-04T10:05:00.000Z' } }),
      unknown('old', { updated_at: '2026-12-04T09:59:59.999Z' }),
      unknown('other_device', { device_id: 'dev_2' }),
      unknown('other_ws', { workspace_id: 'ws_b' }),
    ];
    for (const c of all) await s.insertCall(c);
    await s.saveCalls(all);
    assert.deepEqual((await s.unresolvedUnknowns('ws_a', 'dev_1', '2026-12-04T10:00:00.000Z')).map((c) => c.call_id), ['mine']);
  }));

  test(`${name}: a refused hello is kept, replaced, and cleared; its keys are listed`, withStore(async (s) => {
    assert.equal(await s.refusedHello('ws_a', 'dev_1'), undefined);
    await s.saveRefusedHello('ws_a', 'dev_1', refused);
    assert.deepEqual(await s.refusedHello('ws_a', 'dev_1'), refused);
    const { minimum: _m, ...noMinimum } = refused;
    await s.saveRefusedHello('ws_a', 'dev_1', { ...noMinimum, type: 'unsupported_version', message: 'no' });
    assert.deepEqual(await s.refusedHello('ws_a', 'dev_1'), { ...noMinimum, type: 'unsupported_version', message: 'no' }, 'replaced; no minimum when none was given');
    await s.saveRefusedHello('ws_b', 'dev_1', refused);
    assert.deepEqual((await s.refusedHelloKeys()).sort(), [deviceKey('ws_a', 'dev_1'), deviceKey('ws_b', 'dev_1')].sort());
    await s.clearRefusedHello('ws_a', 'dev_1');
    assert.equal(await s.refusedHello('ws_a', 'dev_1'), undefined);
    assert.deepEqual(await s.refusedHelloKeys(), [deviceKey('ws_b', 'dev_1')]);
  }));

  test(`${name}: a device is created, changed field by field, and kept by an upsert that does not replace`, withStore(async (s) => {
    const id = { workspace_id: 'ws_a', user_id: 'u1', device_id: 'dev_1' };
    await s.upsertDevice({ ...id, name: 'Laptop', platform: 'linux', functions: [{ id: 'files.read' } as never], functions_revision: 2 });
    await s.upsertDevice({ ...id, last_seen: '2026-12-04T10:00:00.000Z', last_closed: { at: '2026-12-04T10:00:00.000Z', type: 'device_limits_exceeded', message: 'too many' } });
    await s.upsertDevice({ ...id, name: 'ignored' }, false);
    assert.deepEqual(await s.getDevice('ws_a', 'dev_1'), {
      ...id, name: 'Laptop', platform: 'linux', arch: null, client_version: null, last_seen: '2026-12-04T10:00:00.000Z',
      functions: [{ id: 'files.read' }], functions_revision: 2, adapter_card_digest: null,
      last_closed: { at: '2026-12-04T10:00:00.000Z', type: 'device_limits_exceeded', message: 'too many' },
    });
    assert.equal(await s.getDevice('ws_b', 'dev_1'), undefined);
    await s.upsertDevice({ workspace_id: 'ws_b', user_id: 'u9', device_id: 'dev_1' }, false);
    assert.equal((await s.getDevice('ws_b', 'dev_1'))?.user_id, 'u9', 'replace: false still creates an unknown device');
  }));

  test(`${name}: a call's target is the device's user and its function's default timeout, as the device publishes it now`, withStore(async (s) => {
    const id = { workspace_id: 'ws_a', user_id: 'u1', device_id: 'dev_1' };
    const fns = [{ id: 'files.read', timeout_ms_default: 5000 }, { id: 'files.list' }, { id: 'odd', timeout_ms_default: 'x' }] as never;
    await s.upsertDevice({ ...id, functions: fns, functions_revision: 1 });
    assert.deepEqual(await s.callTarget('ws_a', 'dev_1', 'files.read'), { user_id: 'u1', timeout_ms_default: 5000 });
    assert.deepEqual(await s.callTarget('ws_a', 'dev_1', 'files.list'), { user_id: 'u1' }, 'no default published');
    assert.deepEqual(await s.callTarget('ws_a', 'dev_1', 'odd'), { user_id: 'u1' }, 'a default that is not a number is none');
    assert.deepEqual(await s.callTarget('ws_a', 'dev_1', 'nope'), { user_id: 'u1' }, 'a function the device does not publish');
    assert.equal(await s.callTarget('ws_b', 'dev_1', 'files.read'), undefined, 'no such device in that workspace');
    // The device's function list changes (tools_changed, a new hello): the next read gives the new default.
    await s.upsertDevice({ ...id, functions: [{ id: 'files.read', timeout_ms_default: 9000 }] as never, functions_revision: 2 });
    assert.deepEqual(await s.callTarget('ws_a', 'dev_1', 'files.read'), { user_id: 'u1', timeout_ms_default: 9000 });
    await s.transaction(async (tx) => assert.equal((await tx.callTarget('ws_a', 'dev_1', 'files.read'))?.timeout_ms_default, 9000, 'in a transaction too'));
  }));

  test(`${name}: an Adapter Card is stored as sent, with the digest of its JSON text`, withStore(async (s) => {
    // Key order matters to the digest: a store that reorders keys (jsonb) would change it.
    const card = { zeta: 1, alpha: { b: 2, a: [1, 'ü'] }, id: 'card' };
    await s.upsertDevice({ workspace_id: 'ws_a', user_id: 'u1', device_id: 'dev_1', adapter_card: card });
    assert.equal((await s.getDevice('ws_a', 'dev_1'))?.adapter_card_digest, cardDigest(card));
    const back = await s.adapterCard('ws_a', 'dev_1');
    assert.equal(JSON.stringify(back), JSON.stringify(card));
    assert.equal(await s.adapterCard('ws_b', 'dev_1'), null);
    await s.upsertDevice({ workspace_id: 'ws_a', user_id: 'u1', device_id: 'dev_1', adapter_card: null });
    assert.equal(await s.adapterCard('ws_a', 'dev_1'), null);
    assert.equal((await s.getDevice('ws_a', 'dev_1'))?.adapter_card_digest, null);
  }));

  test(`${name}: a workspace's devices, ordered by device id as bytes, and no other workspace's`, withStore(async (s) => {
    for (const d of ['b', 'a', 'B', '_x']) await s.upsertDevice({ workspace_id: 'ws_a', user_id: 'u1', device_id: d });
    await s.upsertDevice({ workspace_id: 'ws_b', user_id: 'u1', device_id: 'c' });
    assert.deepEqual((await s.devices('ws_a')).map((d) => d.device_id), ['B', '_x', 'a', 'b']);
  }));

  test(`${name}: a transaction commits its writes together`, withStore(async (s) => {
    const out = await s.transaction(async (tx) => {
      await tx.insertCall(aCall());
      await tx.upsertDevice({ workspace_id: 'ws_a', user_id: 'u1', device_id: 'dev_1', name: 'n' });
      await tx.saveRefusedHello('ws_a', 'dev_2', refused);
      assert.equal((await tx.getCall('ws_a', 'c1'))?.state, 'submitted', 'the transaction reads its own writes');
      return 42;
    });
    assert.equal(out, 42);
    assert.equal((await s.getCall('ws_a', 'c1'))?.state, 'submitted');
    assert.equal((await s.getDevice('ws_a', 'dev_1'))?.name, 'n');
    assert.deepEqual(await s.refusedHello('ws_a', 'dev_2'), refused);
  }));

  test(`${name}: a transaction that throws leaves nothing behind`, withStore(async (s) => {
    await s.upsertDevice({ workspace_id: 'ws_a', user_id: 'u1', device_id: 'dev_1', name: 'before' });
    assert.equal((await s.getDevice('ws_a', 'dev_1'))?.name, 'before');
    await assert.rejects(
      s.transaction(async (tx) => {
        await tx.insertCall(aCall());
        await tx.upsertDevice({ workspace_id: 'ws_a', user_id: 'u1', device_id: 'dev_1', name: 'during' });
        await tx.upsertDevice({ workspace_id: 'ws_a', user_id: 'u1', device_id: 'dev_new' });
        await tx.saveRefusedHello('ws_a', 'dev_1', refused);
        throw new Error('boom');
      }),
      /boom/,
    );
    assert.equal(await s.getCall('ws_a', 'c1'), undefined);
    assert.equal((await s.getDevice('ws_a', 'dev_1'))?.name, 'before');
    assert.equal(await s.getDevice('ws_a', 'dev_new'), undefined);
    assert.equal(await s.refusedHello('ws_a', 'dev_1'), undefined);
    // Still usable after the rollback.
    assert.equal(await s.insertCall(aCall()), true);
  }));

  test(`${name}: writes outside a transaction wait for it or stay out of it: its rollback does not take them`, withStore(async (s) => {
    let inside!: () => void;
    const entered = new Promise<void>((r) => (inside = r));
    let go!: () => void;
    const proceed = new Promise<void>((r) => (go = r));
    const tx = s.transaction(async (t) => {
      await t.insertCall(aCall({ call_id: 'in_tx' }));
      inside();
      await proceed;
      throw new Error('rolled back');
    });
    await entered;
    const outside = s.insertCall(aCall({ call_id: 'outside' }));
    go();
    await assert.rejects(tx, /rolled back/);
    assert.equal(await outside, true);
    assert.equal(await s.getCall('ws_a', 'in_tx'), undefined);
    assert.equal((await s.getCall('ws_a', 'outside'))?.call_id, 'outside');
  }));

  test(`${name}: device sessions: the newest claim wins with a larger epoch and names the session it replaced; the old epoch is no longer current`, withStore(async (s) => {
    const first = await s.claimSession('ws_a', 'dev_1', 'node_a', 60_000);
    assert.equal(first.previous, null, 'the first claim replaces nothing');
    assert.equal(await s.isCurrent('ws_a', 'dev_1', first.epoch), true);
    const second = await s.claimSession('ws_a', 'dev_1', 'node_b', 60_000);
    assert.ok(second.epoch > first.epoch, `epochs grow: ${first.epoch} then ${second.epoch}`);
    assert.deepEqual(second.previous, { node_id: 'node_a', epoch: first.epoch, lapsed: false });
    assert.equal(await s.isCurrent('ws_a', 'dev_1', first.epoch), false, 'a late answer from the old session is refused');
    assert.equal(await s.isCurrent('ws_a', 'dev_1', second.epoch), true);
    assert.equal(await s.isCurrent('ws_b', 'dev_1', second.epoch), false, 'another workspace\'s device is another device');
    const now = await s.session('ws_a', 'dev_1');
    assert.equal(now?.node_id, 'node_b');
    assert.equal(now?.epoch, second.epoch);
    assert.equal(now?.lapsed, false);
    assert.ok(Date.parse(now!.lease_until) > Date.now() + 30_000, `the lease runs a minute: ${now!.lease_until}`);
    // A release by the replaced session changes nothing; the owner's release leaves the device on no node.
    assert.equal(await s.releaseSession('ws_a', 'dev_1', first.epoch), false);
    assert.equal((await s.session('ws_a', 'dev_1'))?.epoch, second.epoch);
    assert.equal(await s.releaseSession('ws_a', 'dev_1', second.epoch), true);
    assert.equal(await s.session('ws_a', 'dev_1'), undefined);
    assert.equal(await s.isCurrent('ws_a', 'dev_1', second.epoch), false);
    const third = await s.claimSession('ws_a', 'dev_1', 'node_a', 60_000);
    assert.ok(third.epoch > second.epoch, 'epochs grow after a release too');
    assert.equal(third.previous, null);
  }));

  test(`${name}: a submit inserts the call only for a live session and tells that session's node, on the commit`, withStore(async (s) => {
    const heard: [string, string][] = [];
    const stop = await listenTo(s, ['aios_node_node_b', 'aios_node_node_c', 'aios_node_node_d'], (channel, payload) => heard.push([channel, payload]));
    try {
      assert.equal(await s.submitCall(aCall(), 'p1'), 'offline', 'no session');
      assert.equal(await s.getCall('ws_a', 'c1'), undefined);
      await s.claimSession('ws_a', 'dev_1', 'node_b', 60_000);
      assert.equal(await s.submitCall(aCall(), 'p2'), 'sent');
      assert.deepEqual(await s.getCall('ws_a', 'c1'), aCall());
      assert.equal(await s.submitCall(aCall({ args_digest: 'sha256:other' }), 'p3'), 'exists');
      assert.equal((await s.getCall('ws_a', 'c1'))?.args_digest, 'sha256:abc', 'the first call stays');
      await assert.rejects(s.transaction(async (tx) => {
        assert.equal(await tx.submitCall(aCall({ call_id: 'c2' }), 'p4'), 'sent');
        throw new Error('rolled back');
      }), /rolled back/);
      assert.equal(await s.getCall('ws_a', 'c2'), undefined, 'nothing of a rolled-back submit');
      await s.claimSession('ws_a', 'dev_1', 'node_c', 0);
      await until(async () => (await s.session('ws_a', 'dev_1'))?.lapsed, 5_000, 'the lease lapsed');
      assert.equal(await s.submitCall(aCall({ call_id: 'c3' }), 'p5'), 'offline', 'a lapsed lease');
      await until(() => heard.length >= 1, 5_000, 'the notification');
      // Anything else would have come before this one (PostgreSQL delivers in commit order).
      assert.equal(await s.submitCall(aCall({ call_id: 'c4', device_id: 'dev_2' }), 'p6'), 'offline');
      await s.claimSession('ws_a', 'dev_2', 'node_d', 60_000);
      assert.equal(await s.submitCall(aCall({ call_id: 'c5', device_id: 'dev_2' }), 'p7'), 'sent');
      await until(() => heard.length >= 2, 5_000, 'the second notification');
      assert.deepEqual(heard, [['aios_node_node_b', 'p2'], ['aios_node_node_d', 'p7']]);
    } finally {
      await stop();
    }
  }));

  test(`${name}: the fence and the call in one read, and the sent flag in one write, both refused to a replaced session`, withStore(async (s) => {
    await s.insertCall(aCall());
    const fencedCall = async (ws: string, dev: string, epoch: number, id: string) => (await s.fencedCalls([{ workspace_id: ws, device_id: dev, epoch, call_id: id }]))[0]!;
    const markSent = async (ws: string, dev: string, epoch: number, id: string) => (await s.markSent([{ workspace_id: ws, device_id: dev, epoch, call_id: id }]))[0]!;
    const first = await s.claimSession('ws_a', 'dev_1', 'node_a', 60_000);
    assert.deepEqual(await fencedCall('ws_a', 'dev_1', first.epoch, 'c1'), { current: true, call: aCall() });
    assert.deepEqual(await fencedCall('ws_a', 'dev_1', first.epoch, 'nope'), { current: true }, 'no such call');
    assert.deepEqual(await fencedCall('ws_b', 'dev_1', first.epoch, 'c1'), { current: false }, 'another workspace\'s device, and its call');
    const second = await s.claimSession('ws_a', 'dev_1', 'node_b', 60_000);
    assert.equal((await fencedCall('ws_a', 'dev_1', first.epoch, 'c1')).current, false, 'the replaced session');
    assert.equal(await markSent('ws_a', 'dev_1', first.epoch, 'c1'), 'refused');
    assert.equal((await s.getCall('ws_a', 'c1'))?.sent, false, 'nothing written for a replaced session');
    assert.equal(await markSent('ws_a', 'dev_1', second.epoch, 'c1'), 'written');
    assert.deepEqual(await s.getCall('ws_a', 'c1'), aCall({ sent: true }), 'the flag and nothing else');
    assert.equal(await markSent('ws_a', 'dev_1', second.epoch, 'c1'), 'unchanged');
    assert.equal(await markSent('ws_a', 'dev_1', second.epoch, 'nope'), 'unchanged');
    await s.releaseSession('ws_a', 'dev_1', second.epoch);
    assert.equal(await markSent('ws_a', 'dev_1', second.epoch, 'c1'), 'refused', 'a released session');
    assert.deepEqual(await fencedCall('ws_a', 'dev_1', second.epoch, 'c1'), { current: false, call: aCall({ sent: true }) });
  }));

  test(`${name}: the fence and the call for several calls in one read, answered in the order asked, in a transaction and outside one`, withStore(async (s) => {
    // An id with a quote and a backslash: the ids travel as one array, inlined in a transaction (Carry).
    const odd = 'c"\\x';
    for (const id of ['c1', 'c2', odd]) await s.insertCall(aCall({ call_id: id }));
    await s.insertCall(aCall({ call_id: 'c3', device_id: 'dev_2' }));
    const one = await s.claimSession('ws_a', 'dev_1', 'node_a', 60_000);
    const old = await s.claimSession('ws_a', 'dev_2', 'node_a', 60_000);
    await s.claimSession('ws_a', 'dev_2', 'node_b', 60_000);
    const key = (call_id: string, device_id = 'dev_1', epoch = one.epoch) => ({ workspace_id: 'ws_a', device_id, epoch, call_id });
    const asked = [key('c2'), key('c3', 'dev_2', old.epoch), key(odd), key('nope'), key('c1')];
    const want = [
      { current: true, call: aCall({ call_id: 'c2' }) },
      { current: false, call: aCall({ call_id: 'c3', device_id: 'dev_2' }) },
      { current: true, call: aCall({ call_id: odd }) },
      { current: true },
      { current: true, call: aCall({ call_id: 'c1' }) },
    ];
    assert.deepEqual(await s.fencedCalls(asked), want);
    assert.deepEqual(await s.transaction((tx) => tx.fencedCalls(asked)), want);
    assert.deepEqual(await s.fencedCalls([]), []);
  }));

  test(`${name}: the sent flags of several calls in one write, each fenced by its own session, answered in the order asked`, withStore(async (s) => {
    const odd = 'c"\\x';
    for (const id of ['c1', 'c2', odd, 'done']) await s.insertCall(aCall({ call_id: id }));
    await s.insertCall(aCall({ call_id: 'c3', device_id: 'dev_2' }));
    await s.insertCall(aCall({ call_id: 'c1', workspace_id: 'ws_b' }));
    const one = await s.claimSession('ws_a', 'dev_1', 'node_a', 60_000);
    const old = await s.claimSession('ws_a', 'dev_2', 'node_a', 60_000);
    await s.claimSession('ws_a', 'dev_2', 'node_b', 60_000);
    assert.deepEqual(await s.markSent([{ workspace_id: 'ws_a', device_id: 'dev_1', epoch: one.epoch, call_id: 'done' }]), ['written']);
    const key = (call_id: string, device_id = 'dev_1', epoch = one.epoch, workspace_id = 'ws_a') => ({ workspace_id, device_id, epoch, call_id });
    const asked = [
      key('c2'),
      key('c3', 'dev_2', old.epoch), // a replaced session: refused, nothing written
      key(odd),
      key('nope'), // no such call
      key('done'), // marked already
      key('c1', 'dev_1', one.epoch, 'ws_b'), // another workspace's device has no session
      key('c1'),
    ];
    const marks = await s.markSent(asked);
    assert.deepEqual(marks, ['written', 'refused', 'written', 'unchanged', 'unchanged', 'refused', 'written']);
    for (const id of ['c1', 'c2', odd, 'done']) assert.deepEqual(await s.getCall('ws_a', id), aCall({ call_id: id, sent: true }), `${id}: the flag and nothing else`);
    assert.equal((await s.getCall('ws_a', 'c3'))?.sent, false, 'nothing written for the replaced session');
    assert.equal((await s.getCall('ws_b', 'c1'))?.sent, false, 'nothing written without a session');
    // The same call twice in one batch: marked once.
    await s.insertCall(aCall({ call_id: 'twice' }));
    assert.deepEqual((await s.markSent([key('twice'), key('twice')])).sort(), ['unchanged', 'written']);
    // In a transaction too, and an empty batch.
    await s.insertCall(aCall({ call_id: 'in_tx' }));
    assert.deepEqual(await s.transaction((tx) => tx.markSent([key('in_tx'), key('c3', 'dev_2', old.epoch)])), ['written', 'refused']);
    assert.equal((await s.getCall('ws_a', 'in_tx'))?.sent, true);
    assert.deepEqual(await s.markSent([]), []);
  }));

  test(`${name}: several calls read in one read, answered in the order asked`, withStore(async (s) => {
    const odd = 'c"\\x';
    for (const id of ['c1', 'c2', odd]) await s.insertCall(aCall({ call_id: id }));
    await s.insertCall(aCall({ call_id: 'c1', workspace_id: 'ws_b', device_id: 'dev_9' }));
    const key = (call_id: string, workspace_id = 'ws_a') => ({ workspace_id, call_id });
    const want = [aCall({ call_id: 'c2' }), undefined, aCall({ call_id: odd }), aCall({ call_id: 'c1', workspace_id: 'ws_b', device_id: 'dev_9' }), aCall({ call_id: 'c1' }), aCall({ call_id: 'c2' }), undefined];
    const asked = [key('c2'), key('nope'), key(odd), key('c1', 'ws_b'), key('c1'), key('c2'), key('c2', 'ws_c')];
    assert.deepEqual(await s.getCalls(asked), want);
    assert.deepEqual(await s.transaction((tx) => tx.getCalls(asked)), want);
    assert.deepEqual(await s.getCalls([]), []);
  }));

  test(`${name}: device sessions: a node's heartbeat renews only its own leases, and a lapsed lease is visible`, withStore(async (s) => {
    await s.claimSession('ws_a', 'dev_1', 'node_a', 60_000);
    await s.claimSession('ws_a', 'dev_2', 'node_a', 60_000);
    await s.claimSession('ws_a', 'dev_3', 'node_b', 60_000);
    assert.deepEqual(await s.lapsedSessions(), []);
    // Node a's last renewal gave no time: as if it had stopped renewing and its lease ran out.
    assert.equal(await s.renewLeases('node_a', 0), 2);
    const lapsed = await until(async () => {
      const l = await s.lapsedSessions();
      return l.length === 2 ? l : null;
    }, 5_000, 'node a\'s lapsed sessions');
    assert.deepEqual(lapsed.map((x) => [x.device_id, x.node_id, x.lapsed]), [['dev_1', 'node_a', true], ['dev_2', 'node_a', true]]);
    assert.equal((await s.session('ws_a', 'dev_3'))?.lapsed, false, 'node b\'s session is untouched');
    // A claim over a lapsed session says so (its owner is gone, most likely).
    const taken = await s.claimSession('ws_a', 'dev_1', 'node_b', 60_000);
    assert.equal(taken.previous?.lapsed, true);
    assert.equal(await s.renewLeases('node_a', 60_000), 1, 'node a renews what it still holds');
    assert.deepEqual(await s.lapsedSessions(), []);
  }));

  test(`${name}: the retention sweep removes ended calls older than the cutoff, a batch at a time, never an open one`, withStore(async (s) => {
    const ended = (id: string, at: string): StoredCall => ({
      ...aCall({ call_id: id, updated_at: at }),
      state: 'completed',
      outcome: { call_id: id, function: 'files.read', state: 'completed', output: {}, output_valid: true, error: null, replayed: false, accepted_at: at, started_at: at, finished_at: at, duration_ms: 0 } as NonNullable<StoredCall['outcome']>,
    });
    for (const [id, at] of [['old_1', '2026-10-01T00:00:00.000Z'], ['old_2', '2026-10-02T00:00:00.000Z'], ['old_3', '2026-10-03T00:00:00.000Z'], ['new_1', '2026-12-04T00:00:00.000Z']] as const) {
      await s.insertCall(aCall({ call_id: id }));
      await s.saveCall(ended(id, at));
    }
    await s.insertCall(aCall({ call_id: 'open_old', updated_at: '2026-09-01T00:00:00.000Z' }));
    await s.saveCall(aCall({ call_id: 'open_old', updated_at: '2026-09-01T00:00:00.000Z' }));
    assert.equal(await s.pruneEndedCalls('2026-11-01T00:00:00.000Z', 2), 2, 'at most the limit');
    assert.equal(await s.getCall('ws_a', 'old_1'), undefined, 'the oldest go first');
    assert.equal(await s.getCall('ws_a', 'old_2'), undefined);
    assert.equal(await s.pruneEndedCalls('2026-11-01T00:00:00.000Z', 2), 1);
    assert.equal(await s.pruneEndedCalls('2026-11-01T00:00:00.000Z', 2), 0);
    assert.equal((await s.getCall('ws_a', 'new_1'))?.state, 'completed', 'newer than the cutoff: kept');
    assert.equal((await s.getCall('ws_a', 'open_old'))?.state, 'submitted', 'an open call is never removed, however old');
    assert.equal(await s.insertCall(aCall({ call_id: 'old_1' })), true, 'a removed call id can be used again (a new call)');
  }));

  test(`${name}: a node's sessions and their devices' open calls, each in one read`, withStore(async (s) => {
    const a1 = await s.claimSession('ws_a', 'dev_1', 'node_a', 60_000);
    await s.claimSession('ws_b', 'dev_1', 'node_a', 60_000);
    await s.claimSession('ws_a', 'dev_2', 'node_b', 60_000);
    assert.deepEqual((await s.nodeSessions('node_a')).map((x) => [x.workspace_id, x.device_id, x.node_id]), [['ws_a', 'dev_1', 'node_a'], ['ws_b', 'dev_1', 'node_a']]);
    assert.equal((await s.session('ws_a', 'dev_1'))?.protocol_version, null, 'a claim without a version has none');
    await s.claimSession('ws_a', 'dev_9', 'node_b', 60_000, '1.2');
    assert.equal((await s.session('ws_a', 'dev_9'))?.protocol_version, '1.2', 'the version the hello agreed, for every node to show');
    assert.equal((await s.nodeSessions('node_a'))[0]?.epoch, a1.epoch);
    assert.deepEqual(await s.nodeSessions('node_c'), []);
    await s.insertCall(aCall({ call_id: 'open_a1', workspace_id: 'ws_a', device_id: 'dev_1' }));
    await s.insertCall(aCall({ call_id: 'open_b1', workspace_id: 'ws_b', device_id: 'dev_1' }));
    await s.insertCall(aCall({ call_id: 'open_a2', workspace_id: 'ws_a', device_id: 'dev_2' }));
    await s.insertCall(aCall({ call_id: 'open_a3', workspace_id: 'ws_a', device_id: 'dev_3' }));
    const done = aCall({ call_id: 'done_a1', workspace_id: 'ws_a', device_id: 'dev_1' });
    await s.insertCall(done);
    const now = new Date().toISOString();
    await s.saveCall({ ...done, state: 'completed', outcome: { call_id: 'done_a1', function: done.function, state: 'completed', output: {}, output_valid: true, error: null, replayed: false, accepted_at: now, started_at: now, finished_at: now, duration_ms: 0 } as NonNullable<StoredCall['outcome']> });
    assert.deepEqual((await s.openCallsOfNode('node_a')).map((c) => c.call_id).sort(), ['open_a1', 'open_b1'], 'only open calls, only of node a\'s devices (a device id in another workspace is another device)');
    assert.deepEqual((await s.openCallsOfNode('node_b')).map((c) => c.call_id), ['open_a2']);
    assert.deepEqual(await s.openCallsOfNode('node_c'), []);
  }));

  test(`${name}: device sessions: a claim in a transaction that rolls back leaves the previous session current`, withStore(async (s) => {
    const first = await s.claimSession('ws_a', 'dev_1', 'node_a', 60_000);
    await assert.rejects(s.transaction(async (tx) => {
      const c = await tx.claimSession('ws_a', 'dev_1', 'node_b', 60_000);
      assert.equal(await tx.isCurrent('ws_a', 'dev_1', c.epoch), true, 'the transaction sees its claim');
      throw new Error('boom');
    }), /boom/);
    assert.equal(await s.isCurrent('ws_a', 'dev_1', first.epoch), true);
    assert.equal((await s.session('ws_a', 'dev_1'))?.node_id, 'node_a');
  }));

  test(`${name}: everything survives closing the store and opening it again`, withStore(async (s, place) => {
    await s.insertCall(aCall());
    await s.saveRefusedHello('ws_a', 'dev_1', refused);
    await s.upsertDevice({ workspace_id: 'ws_a', user_id: 'u1', device_id: 'dev_1', name: 'kept', adapter_card: { id: 'card' } });
    await s.close();
    const again = await place.open();
    try {
      assert.deepEqual(await again.getCall('ws_a', 'c1'), aCall());
      assert.deepEqual(await again.refusedHello('ws_a', 'dev_1'), refused);
      assert.equal((await again.getDevice('ws_a', 'dev_1'))?.name, 'kept');
      assert.deepEqual(await again.adapterCard('ws_a', 'dev_1'), { id: 'card' });
      assert.equal(await again.insertCall(aCall()), false, 'the idempotency key outlives the process');
    } finally {
      await again.close();
    }
  }));
}
