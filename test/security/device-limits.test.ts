/**
 * Issue 27, finding 2: one device cannot exhaust the bridge. The attack: a device of workspace B (a raw
 * WebSocket session with a valid device token) answers `aios/function.list` with an endless list, huge
 * descriptors, or floods `tools_changed`. Old code read up to 100 pages of 1 MiB into memory and the
 * store, again in full on every notification. Now each device is held to `device_limits`, one read runs
 * per session (notifications coalesce), and past a bound the session closes with 4008 and
 * `device_limits_exceeded`, kept as the device's `last_closed`. Meanwhile a real agent in workspace A
 * keeps completing calls. (Memory under a flood belongs in a bench, not in a test.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { inProcessStack, until } from '../helpers/stack.js';
import { RuntimeClient } from '../../src/runtime-client/client.js';
import { METHODS } from '../../src/protocol/messages.js';
import { RogueDevice } from './helpers.js';

// Small enough for a test, large enough for workspace A's real agent (diagnostics and device handlers).
const LIMITS = { max_functions: 64, max_descriptor_bytes: 16_384, max_list_bytes: 262_144, tools_changed_per_s: 1 };

function descriptor(n: number, pad = 0) {
  return { id: `rogue.f${n}`, name: `F${n}`, description: 'x'.repeat(pad), input_schema: { type: 'object' }, risk: 'low' };
}

describe('one device cannot exhaust the bridge (device_limits)', () => {
  let s: Awaited<ReturnType<typeof inProcessStack>>;
  let n = 0;
  const devB = () => {
    n++;
    const token = `dt_b_${n}`;
    return { token, id: { workspace_id: 'ws_b', user_id: 'usr_b', device_id: `dev_b${n}` } };
  };
  const tokensB = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`dt_b_${i + 1}`, { workspace_id: 'ws_b', user_id: 'usr_b', device_id: `dev_b${i + 1}` }]));
  let clientB: RuntimeClient;

  before(async () => {
    s = await inProcessStack({ bridge: { device_limits: LIMITS, device_tokens: tokensB, runtime_tokens: { rt_b: { workspace_id: 'ws_b' } } } });
    clientB = new RuntimeClient({ bridge_url: s.url, token: 'rt_b', workspace_id: 'ws_b' });
  });
  after(async () => {
    await s?.stop();
  });

  /** Connects a rogue device of workspace B; resolves the close code and reason when its session ends. */
  async function rogue(functionList: (p: { cursor?: string }) => unknown) {
    const { token, id } = devB();
    let closedWith: { code: number; reason: string } | undefined;
    let lists = 0;
    const d = await RogueDevice.connect(s.url, token, id, {
      functionList: (p) => {
        lists++;
        return functionList(p);
      },
    });
    d.ws.on('close', (code, reason) => (closedWith = { code, reason: reason.toString() }));
    // Polled, so that a bridge that never closes the session fails the test instead of hanging it.
    const closed = until(() => closedWith, 10_000, `the bridge to close ${id.device_id}'s session`) as Promise<{ code: number; reason: string }>;
    closed.catch(() => undefined);
    return { d, id, closed, lists: () => lists };
  }

  /** A call on workspace A's real agent completes. */
  async function workspaceACompletes() {
    const r = await s.client.call('device.info', {}, { timeout_ms: 30_000 });
    assert.equal(r.record.outcome?.state, 'completed', JSON.stringify(r.record));
  }

  test('an endless list: reading stops at max_functions, the session closes 4008 device_limits_exceeded, the store keeps no list past the bound', async () => {
    let next = 0;
    // Twenty functions a page, a next cursor forever.
    const r = await rogue(() => ({ functions: Array.from({ length: 20 }, () => descriptor(next++)), revision: 1, next_cursor: `c${next}` }));
    const [closed] = await Promise.all([r.closed, workspaceACompletes()]);
    assert.equal(closed.code, 4008);
    assert.deepEqual(JSON.parse(closed.reason), { type: 'device_limits_exceeded', code: -41063, details: { bound: 'max_functions' } });
    // 60 fit in 64, the fourth page would make 80: four pages, then the session ends.
    assert.equal(r.lists(), 4);
    const dev = await clientB.device(r.id.device_id);
    assert.deepEqual(dev['functions'], [], 'nothing of the list over the bound is stored');
    assert.equal((dev['last_closed'] as { type: string }).type, 'device_limits_exceeded');
    assert.match((dev['last_closed'] as { message: string }).message, /more than 64 functions/);
    assert.equal(dev['online'], false);
    await workspaceACompletes();
  });

  test('a descriptor over max_descriptor_bytes or a list over max_list_bytes closes the session; the stored row stays within the bound', async () => {
    const big = await rogue(() => ({ functions: [descriptor(1), descriptor(2, 20_000)], revision: 1 }));
    assert.deepEqual(JSON.parse((await big.closed).reason).details, { bound: 'max_descriptor_bytes' });
    let k = 0;
    // Each descriptor ~12 KB, within its own bound; two a page: the eleventh page is over the list's 256 KiB.
    const long = await rogue(() => ({ functions: [descriptor(k++, 12_000), descriptor(k++, 12_000)], revision: 1, next_cursor: 'more' }));
    assert.deepEqual(JSON.parse((await long.closed).reason).details, { bound: 'max_list_bytes' });
    assert.equal(long.lists(), 11);
    s.bridge.store.flushDevices();
    const rows = s.bridge.store.db.prepare(`SELECT length(functions) AS n FROM bridge_devices WHERE workspace_id = 'ws_b'`).all() as { n: number }[];
    for (const row of rows) assert.ok(row.n <= LIMITS.max_list_bytes, `a stored list is ${row.n} bytes`);
  });

  test('tools_changed while a read runs coalesce into one more read', async () => {
    let gate: (() => void) | undefined;
    let revision = 1;
    const r = await rogue(async () => {
      if (gate === undefined && revision > 1) await new Promise<void>((res) => (gate = res));
      return { functions: [descriptor(revision)], revision };
    });
    await until(async () => (await clientB.device(r.id.device_id))['functions_revision'] === 1, 10_000, 'first list stored');
    const readsBefore = s.bridge.functionLists.readsStarted;
    revision = 2;
    const note = { revision: 2, added: [], removed: [], updated: [] };
    for (let i = 0; i < 5; i++) r.d.peer.notify(METHODS.toolsChanged, note);
    await until(() => gate, 10_000, 'the first re-read is under way');
    revision = 3;
    const release = gate!;
    gate = () => undefined; // later reads answer at once
    release();
    await until(async () => (await clientB.device(r.id.device_id))['functions_revision'] === 3, 10_000, 'the coalesced read stored revision 3');
    assert.equal(r.lists(), 3, 'hello read, the re-read, and one coalesced re-read');
    assert.equal(s.bridge.functionLists.readsStarted - readsBefore, 2, 'five notifications: the read under way and one more');
    r.d.close();
  });

  test('a tools_changed flood closes the session (tools_changed_per_s) after a bounded number of reads; workspace A keeps completing calls', async () => {
    const r = await rogue(() => ({ functions: [descriptor(1)], revision: 1 }));
    await until(async () => (await clientB.device(r.id.device_id))['functions_revision'] === 1, 10_000, 'first list stored');
    const readsBefore = s.bridge.functionLists.readsStarted;
    const note = { revision: 1, added: [], removed: [], updated: [] };
    for (let i = 0; i < 500; i++) r.d.peer.notify(METHODS.toolsChanged, note);
    const [closed] = await Promise.all([r.closed, workspaceACompletes()]);
    assert.equal(closed.code, 4008);
    assert.deepEqual(JSON.parse(closed.reason).details, { bound: 'tools_changed_per_s' });
    // The burst is ten notifications; while one read runs the rest coalesce: never more than the burst.
    assert.ok(s.bridge.functionLists.readsStarted - readsBefore <= 10, `reads: ${s.bridge.functionLists.readsStarted - readsBefore}`);
    assert.ok(r.lists() <= 11);
    const dev = await clientB.device(r.id.device_id);
    assert.match((dev['last_closed'] as { message: string }).message, /tools_changed more often than 1 per second/);
    await workspaceACompletes();
  });

  test('a device within the bounds keeps its session and its whole list', async () => {
    const r = await rogue((p) => (p.cursor ? { functions: [descriptor(3), descriptor(4)], revision: 5 } : { functions: [descriptor(1), descriptor(2)], revision: 5, next_cursor: 'p2' }));
    await until(async () => (await clientB.device(r.id.device_id))['functions_revision'] === 5, 10_000, 'list stored');
    const dev = await clientB.device(r.id.device_id);
    assert.deepEqual((dev['functions'] as { id: string }[]).map((f) => f.id), ['rogue.f1', 'rogue.f2', 'rogue.f3', 'rogue.f4']);
    assert.equal(dev['online'], true);
    assert.equal(dev['last_closed'], null);
    r.d.close();
  });
});
