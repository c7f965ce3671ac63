/**
 * Issue 27, finding 5: pause pauses a call that was already waiting. Through the CLI-started bridge and
 * agent: call A holds a lock (diagnostics.wait), call B waits for it; `aios-device pause` (another
 * process, as a user would) ends B `rejected/paused` with `side_effects: none` while A still holds the
 * lock, and B's handler never starts. After resume, the same wait runs.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cliRun, processStack, until } from '../helpers/stack.js';

type Stack = Awaited<ReturnType<typeof processStack>>;

describe('pause and calls already waiting', () => {
  let s: Stack;
  before(async () => {
    s = await processStack();
  });
  after(() => s?.stop());

  const state = async (id: string) => (await s.client.getCall(id)).state;
  const dataDir = () => join(s.dir, 'agent');

  test('a call waiting for a lock held across the pause ends rejected/paused and never starts', async () => {
    const a = (await s.client.call('diagnostics.wait', { ms: 120_000, lock: 'bench' }, { wait: false, timeout_ms: 150_000 })).record.call_id;
    await until(async () => (await state(a)) === 'running', 20_000, 'A running');
    const b = (await s.client.call('diagnostics.wait', { ms: 10, lock: 'bench' }, { wait: false, timeout_ms: 150_000 })).record.call_id;
    await until(async () => (await state(b)) === 'accepted', 20_000, 'B waiting for the lock');

    const p = await cliRun(['pause', '--data-dir', dataDir()]);
    assert.equal(p.code, 0, p.err);
    const done = await s.client.waitTerminal(b, 20_000);
    const o = done.outcome!;
    assert.deepEqual([o.state, o.error?.type, o.error?.side_effects, o.started_at], ['rejected', 'paused', 'none', null], JSON.stringify(o));
    assert.equal(await state(a), 'running', 'B ended while A still held the lock');

    await s.client.cancel(a);
    assert.equal((await s.client.waitTerminal(a, 20_000)).outcome?.state, 'cancelled');
    const r = await cliRun(['resume', '--data-dir', dataDir()]);
    assert.equal(r.code, 0, r.err);
    await until(async () => {
      const c = await s.client.call('diagnostics.wait', { ms: 10, lock: 'bench' });
      return c.record.outcome?.state === 'completed';
    }, 20_000, 'a wait on the lock runs after resume');
  });
});
