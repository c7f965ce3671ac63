/**
 * The reference bridge's call records while calls run: the router keeps open calls in memory and saves
 * their non-terminal states at the end of the turn, and the outcome at once. What the store holds is
 * checked directly, as a restarted bridge would read it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inProcessStack, until } from '../helpers/stack.js';

type Stack = Awaited<ReturnType<typeof inProcessStack>>;

function stored(s: Stack, callId: string) {
  return s.bridge.store.getCall('ws_t', callId);
}

test('a running call\'s states reach the store while it runs; its outcome replaces them and stays', async () => {
  const s = await inProcessStack({ agent: { handlers: { diagnostics: { enabled: true } } } });
  try {
    const { record } = await s.client.call('diagnostics.wait', { ms: 1500 }, { wait: false });
    await until(() => stored(s, record.call_id)?.state === 'running', 5000, 'the running state saved');
    const during = stored(s, record.call_id)!;
    assert.equal(during.outcome, undefined);
    // On a 1.1 session the `accepted` note may be dropped (superseded by `running` within 10 ms, §6.2).
    assert.deepEqual(during.timeline.map((t) => t.state).filter((x) => x !== 'accepted'), ['submitted', 'running']);
    assert.equal((await s.client.getCall(record.call_id)).state, 'running', 'the API shows the live state');
    await until(() => stored(s, record.call_id)?.outcome !== undefined, 10_000, 'the outcome saved');
    // A barrier instead of a sleep: frames on one session arrive in order, so once a later call has
    // completed, every note the first call sent has been handled; nothing stale overwrote the outcome.
    await s.client.call('diagnostics.echo', { value: 'barrier' });
    const after = stored(s, record.call_id)!;
    assert.equal(after.state, 'completed');
    assert.equal(after.outcome?.state, 'completed');
    assert.deepEqual(after.timeline.map((t) => t.state), ['submitted', 'accepted', 'running', 'completed']);
  } finally {
    await s.stop();
  }
});

test('a fast call (states and outcome in one frame burst) is stored completed, with its whole timeline', async () => {
  const s = await inProcessStack({ agent: { handlers: { diagnostics: { enabled: true } } } });
  try {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await s.client.call('diagnostics.echo', { value: i })).record.call_id);
    await s.client.call('diagnostics.echo', { value: 'barrier' }); // in-order frames: every earlier note is handled

    for (const id of ids) {
      const c = stored(s, id)!;
      assert.equal(c.outcome?.state, 'completed', id);
      assert.equal(c.state, 'completed');
      assert.deepEqual(c.timeline.map((t) => t.state), ['submitted', 'accepted', 'running', 'completed']);
    }
  } finally {
    await s.stop();
  }
});
