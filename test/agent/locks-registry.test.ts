/** Lock manager ordering and aborts; the function registry's checks, hashes, revision and coalescing. */
import { once } from 'node:events';
import { test } from 'node:test';
import { alive } from '../helpers/wait.js';
import assert from 'node:assert/strict';
import { LockManager, LockAbortedError } from '../../src/agent/locks.js';
import { FunctionRegistry, DescriptorError } from '../../src/agent/registry.js';
import { schemaValidator } from '../../src/protocol/schema-validator.js';
import type { FunctionDefinition, DescriptorInput } from '../../src/sdk/index.js';
import type { ToolsChanged } from '../../src/protocol/messages.js';

test('calls on one lock run in arrival order; an aborted waiter leaves the queue', async () => {
  const m = new LockManager();
  const order: string[] = [];
  const r1 = await m.acquireAll(['a']);
  const ctl = new AbortController();
  const p2 = m.acquireAll(['a']).then((r) => (order.push('2'), r));
  const p3 = m.acquireAll(['a'], ctl.signal).then((r) => (order.push('3'), r));
  const p4 = m.acquireAll(['a', 'b']).then((r) => (order.push('4'), r));
  ctl.abort();
  await assert.rejects(p3, LockAbortedError);
  r1();
  (await p2)();
  (await p4)();
  assert.deepEqual(order, ['2', '4']);
  assert.equal(m.isHeld('a'), false);
});

const desc = (id: string, extra: Partial<DescriptorInput> = {}): DescriptorInput => ({
  id, name: id, description: 'd', version: '1.0.0', capability_type: 'test', access: 'public', permission_level: 'low', confirmation: 'never',
  input_schema: { type: 'object' }, output_schema: { type: 'object' }, timeout_ms_default: 100, timeout_ms_max: 1000, cancellable: true, locks: [], ...extra,
});
const def = (d: DescriptorInput): FunctionDefinition<never, unknown> => ({ descriptor: d, run: async () => ({}) });

test('bad descriptors are refused with the reason', () => {
  const r = new FunctionRegistry();
  assert.throws(() => r.register('x', [def(desc('BadId'))]), DescriptorError);
  assert.throws(() => r.register('x', [def(desc('a.b', { timeout_ms_default: 5000 }))]), /exceeds timeout_ms_max/);
  assert.throws(() => r.register('x', [def(desc('a.c', { input_schema: { type: 'nonsense' } }))]), /not a valid JSON Schema/);
  r.register('x', [def(desc('a.ok'))]);
  assert.throws(() => r.register('y', [def(desc('a.ok'))]), /already registered by x/);
  assert.match(r.get('a.ok')!.descriptor.descriptor_hash!, /^sha256-[A-Za-z0-9_-]{43}$/);
});

test('schemas compile on first use (issue 32): registration checks them against the meta-schema only', () => {
  const r = new FunctionRegistry();
  // Valid against the meta-schema, but its $ref names nothing: compiling it fails.
  const dangling = { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } };
  assert.throws(() => r.register('x', [def(desc('a.bad', { input_schema: { type: 'object', pattern: '(' } }))]), /not a valid JSON Schema/, 'a bad regex is still refused at registration');
  r.register('x', [def(desc('a.lazy', { input_schema: dangling }))]);
  const reg = r.get('a.lazy')!;
  assert.throws(() => schemaValidator.validate(reg.descriptor.input_schema, { a: 1 }), /missing/, 'compiled (and refused) on its first use');
});

test('replacing a source announces only what changed in it', async () => {
  const r = new FunctionRegistry();
  r.replaceSource('adapter:a', [def(desc('a.one')), def(desc('a.two'))]);
  r.replaceSource('adapter:b', [def(desc('b.one'))]);
  r.discardPending();
  r.settle();
  const events: ToolsChanged[] = [];
  r.on('changed', (c: ToolsChanged) => events.push(c));
  // The wiring replaces every adapter's functions whenever any adapter changes.
  r.replaceSource('adapter:a', [def(desc('a.one')), def(desc('a.two'))]);
  r.replaceSource('adapter:b', [def(desc('b.one', { name: 'renamed' })), def(desc('b.two'))]);
  await alive(once(r, 'changed')); // the coalesced announcement: every change above was made before its timer
  assert.equal(events.length, 1);
  assert.deepEqual(events[0]!.updated.map((x) => x.id), ['b.one'], 'a.* did not change and is not announced');
  assert.deepEqual(events[0]!.added.map((x) => x.id), ['b.two']);
  r.replaceSource('adapter:b', [def(desc('b.two'))]);
  await alive(once(r, 'changed')); // the coalesced announcement: every change above was made before its timer
  assert.deepEqual(events[1]!.removed.map((x) => x.id), ['b.one'], 'a function the source no longer has is removed');
  assert.ok(r.get('a.one') && r.get('b.two') && !r.get('b.one'));
});

test('changes are coalesced into one tools_changed with a strictly increasing revision', async () => {
  const kv = new Map<string, string>();
  const r = new FunctionRegistry({ get: (k) => kv.get(k), set: (k, v) => void kv.set(k, v) });
  r.register('x', [def(desc('a.one')), def(desc('a.two'))]);
  r.discardPending();
  const rev0 = r.settle();
  const events: ToolsChanged[] = [];
  r.on('changed', (c: ToolsChanged) => events.push(c));
  r.register('y', [def(desc('b.one'))]);
  r.register('x', [def(desc('a.one', { name: 'renamed' })), def(desc('a.two'))]);
  r.unregisterSource('y');
  r.register('z', [def(desc('c.one'))]);
  await alive(once(r, 'changed')); // the coalesced announcement: every change above was made before its timer
  assert.equal(events.length, 1);
  assert.deepEqual(events[0]!.added.map((x) => x.id), ['c.one']);
  assert.deepEqual(events[0]!.updated.map((x) => x.id), ['a.one']);
  assert.deepEqual(events[0]!.removed, []);
  assert.ok(events[0]!.revision > rev0);
  const again = new FunctionRegistry({ get: (k) => kv.get(k), set: (k, v) => void kv.set(k, v) });
  assert.equal(again.revision, events[0]!.revision, 'the revision survives a restart');
});
