/**
 * The one owner of a call's state on the device (`src/agent/call/call.ts`, issue 32 item 2): every entered
 * state is journalled before its note goes out, in the order the transition table allows; a call entering
 * `running` first is one journal write; a failed accept is a `JournalFault` and sends no note; a call that
 * ends before it entered anything is journalled with its outcome. The journal and the outbox's store here are
 * recorders (this is the logic's unit test; the dispatcher's and the journal's own tests run them for real).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Call, JournalFault, type CallDesk } from '../../src/agent/call/call.js';
import { CallAbort } from '../../src/agent/abort.js';
import { Outbox, type OutboxStore } from '../../src/agent/outbox.js';
import { StateNotes } from '../../src/agent/state-notes.js';
import { silentLogger } from '../../src/base/logger.js';
import type { CallStateNote, Outcome } from '../../src/protocol/messages.js';
import type { RegisteredFunction } from '../../src/agent/registry.js';

/** A call on a desk whose journal and outbox record what is written, in one shared log with the notes. */
function rig(o: { failAccept?: boolean } = {}) {
  const log: string[] = [];
  const journal: CallDesk['journal'] = {
    accept: async (id, _fn, _digest, _at, state = 'accepted') => {
      if (o.failAccept) throw new Error('disk full');
      log.push(`accept ${id} ${state}`);
    },
    setState: async (id, state) => void log.push(`set ${id} ${state}`),
  };
  const store = {
    finish: async (outcome: Outcome, delivered: boolean) => void log.push(`finish ${outcome.call_id} ${outcome.state} ${delivered ? 'delivered' : 'waiting'}`),
  } as unknown as OutboxStore;
  const notes = new StateNotes({ send: (n: CallStateNote) => void log.push(`note ${n.call_id} ${n.state} #${n.seq}`), coalesce: () => false });
  const desk: CallDesk = { journal, notes, outbox: new Outbox({ store, log: silentLogger() }) };
  const call = (id = 'c1') => new Call(desk, id, 'test.f', 'digest', {} as RegisteredFunction, new CallAbort());
  return { log, call };
}

function outcomeOf(call: Call, state: Outcome['state']): Outcome {
  const at = new Date().toISOString();
  return { call_id: call.callId, function: call.fn, state, output: state === 'completed' ? {} : undefined, output_valid: state === 'completed', error: null, replayed: false, accepted_at: call.times.acceptedAt, started_at: call.times.startedAt, finished_at: at, duration_ms: 0 } as Outcome;
}

test('entering running first is one journal write, then the accepted and running notes', async () => {
  const r = rig();
  const c = r.call();
  assert.equal(c.entered, false);
  await c.enter('running');
  assert.equal(c.entered, true);
  assert.equal(c.state, 'running');
  assert.ok(c.times.startedAt, 'running records when it started');
  assert.deepEqual(r.log, ['accept c1 running', 'note c1 accepted #0', 'note c1 running #1']);
});

test('the consent path: accepted, then awaiting_confirmation, then running, each journalled before its note', async () => {
  const r = rig();
  const c = r.call();
  await c.enter('accepted');
  await c.enter('awaiting_confirmation');
  await c.enter('running');
  assert.deepEqual(r.log, ['accept c1 accepted', 'note c1 accepted #0', 'set c1 awaiting_confirmation', 'note c1 awaiting_confirmation #1', 'set c1 running', 'note c1 running #2']);
});

test('the transition table refuses a state that may not follow, and writes nothing for it', async () => {
  const r = rig();
  const c = r.call();
  await assert.rejects(c.enter('awaiting_confirmation'), /new cannot be followed by awaiting_confirmation/);
  await c.enter('running');
  const before = r.log.length;
  await assert.rejects(c.enter('accepted'), /running cannot be followed by accepted/);
  await assert.rejects(c.enter('running'), /running cannot be followed by running/);
  await assert.rejects(c.enter('awaiting_confirmation'), /running cannot be followed by awaiting_confirmation/);
  assert.equal(r.log.length, before, 'a refused transition wrote nothing and sent no note');
  assert.equal(c.state, 'running');
});

test('an accept the journal refuses is a JournalFault, with no note: the call must not run', async () => {
  const r = rig({ failAccept: true });
  const c = r.call();
  await assert.rejects(c.enter('running'), (e: unknown) => e instanceof JournalFault && String((e as JournalFault).cause).includes('disk full'));
  assert.deepEqual(r.log, []);
});

test('a call that ends before it entered anything is journalled with its outcome; its notes end (1.0: accepted, then the end)', async () => {
  const r = rig();
  const c = r.call();
  const failures: unknown[] = [];
  await c.end(outcomeOf(c, 'rejected'), '{}', { error: (o) => void failures.push(o) });
  assert.deepEqual(failures, []);
  assert.equal(c.state, 'rejected');
  assert.deepEqual(r.log, ['accept c1 accepted', 'finish c1 rejected waiting', 'note c1 accepted #0', 'note c1 rejected #1']);
});

test('a running call ends through the outbox (waiting: no session is up), its terminal note last', async () => {
  const r = rig();
  const c = r.call();
  await c.enter('running');
  await c.end(outcomeOf(c, 'completed'), '{}', { error: () => assert.fail('no write failed') });
  assert.deepEqual(r.log.slice(3), ['finish c1 completed waiting', 'note c1 completed #2']);
});
