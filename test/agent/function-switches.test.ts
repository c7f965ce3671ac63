/**
 * Functions on and off: the config's ceiling, the user's choices persisted in user-settings.json (0600),
 * `change` only on an effective change, and the registry's revision following what is published.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FunctionSwitches, SwitchError } from '../../src/agent/function-switches.js';
import { FunctionRegistry } from '../../src/agent/registry.js';
import { LOG_LEVELS, setLoggerLevel, loggerLevel } from '../../src/agent/settings-methods.js';
import { pino } from 'pino';
import type { Logger } from '../../src/sdk/index.js';

const dir = () => mkdtempSync(join(tmpdir(), 'aios-switch-'));

test('a user turns functions off and on; it persists across a new store; the admin ceiling holds', () => {
  const d = dir();
  try {
    const s = new FunctionSwitches({ adminDisabled: ['device.notify'], dataDir: d });
    const changes: { id: string; enabled: boolean }[] = [];
    s.on('change', (c) => changes.push(c));
    assert.equal(s.isDisabled('device.notify'), true);
    assert.equal(s.isDisabled('files.list_dir'), false);

    assert.deepEqual(s.set('files.list_dir', false), { id: 'files.list_dir', enabled: false, admin_disabled: false });
    assert.equal(s.isDisabled('files.list_dir'), true);
    // Turning off what is off: no change announced.
    s.set('files.list_dir', false);
    s.set('device.notify', false);
    assert.deepEqual(changes, [{ id: 'files.list_dir', enabled: false }]);

    assert.throws(() => s.set('device.notify', true), (e: unknown) => e instanceof SwitchError && /administrator/.test(e.message));
    assert.equal(s.isDisabled('device.notify'), true, 'the refused switch changed nothing');

    const file = join(d, 'user-settings.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(JSON.parse(readFileSync(file, 'utf8')).functions.disabled, ['device.notify', 'files.list_dir']);

    const again = new FunctionSwitches({ adminDisabled: [], dataDir: d });
    assert.equal(again.isDisabled('files.list_dir'), true, 'kept across a restart');
    assert.equal(again.isDisabled('device.notify'), true, 'what the user turned off stays off when the admin no longer does');
    again.set('files.list_dir', true);
    assert.deepEqual(again.list(['files.list_dir', 'x.y']), [
      { id: 'files.list_dir', enabled: true, admin_disabled: false },
      { id: 'x.y', enabled: true, admin_disabled: false },
    ]);
    assert.equal(new FunctionSwitches({ dataDir: d }).isDisabled('files.list_dir'), false);
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

test('an unreadable user settings file leaves the config alone in charge', () => {
  const d = dir();
  try {
    writeFileSync(join(d, 'user-settings.json'), '{ not json');
    const warnings: string[] = [];
    const log = { warn: (_o: object, m?: string) => warnings.push(m ?? '') } as unknown as Logger;
    const s = new FunctionSwitches({ adminDisabled: ['a.b'], dataDir: d, log });
    assert.equal(s.isDisabled('a.b'), true);
    assert.equal(s.isDisabled('c.d'), false);
    assert.equal(warnings.length, 1);
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});

const def = (id: string) => ({
  descriptor: {
    id,
    name: id,
    description: 'test',
    version: '1.0.0',
    capability_type: 'api',
    access: 'restricted',
    permission_level: 'low',
    confirmation: 'never',
    input_schema: { type: 'object' },
    output_schema: {},
    timeout_ms_default: 1000,
    timeout_ms_max: 1000,
    cancellable: false,
    locks: [],
  },
  run: async () => ({}),
});

test('the registry announces a function turned off as removed and on again as added, each a new revision', async (t) => {
  // The registry's coalescing timer does not hold the process open: this does, while the test waits.
  const keep = setInterval(() => undefined, 1000);
  t.after(() => clearInterval(keep));
  const meta = new Map<string, string>();
  const store = { get: (k: string) => meta.get(k), set: (k: string, v: string) => void meta.set(k, v) };
  const off = new Set<string>();
  const r = new FunctionRegistry(store);
  r.hidden = (id) => off.has(id);
  r.register('t', [def('t.a'), def('t.b')] as never);
  r.discardPending();
  const rev0 = r.settle();
  const changed = () => new Promise<{ revision: number; added: unknown[]; removed: unknown[] }>((res) => r.once('changed', res));

  off.add('t.a');
  let next = changed();
  r.setPublished('t.a', false);
  const c1 = await next;
  assert.deepEqual(c1.removed, [{ id: 't.a', name: 't.a' }]);
  assert.ok(c1.revision > rev0);

  off.delete('t.a');
  next = changed();
  r.setPublished('t.a', true);
  const c2 = await next;
  assert.deepEqual(c2.added, [{ id: 't.a', name: 't.a' }]);
  assert.ok(c2.revision > c1.revision);

  // Off and on again within the coalescing window: no revision of its own (at most an `updated` entry
  // folded into the next real change).
  off.add('t.a');
  r.setPublished('t.a', false);
  off.delete('t.a');
  r.setPublished('t.a', true);
  off.add('t.b');
  next = changed();
  r.setPublished('t.b', false);
  const c3 = await next;
  assert.deepEqual([c3.added, c3.removed], [[], [{ id: 't.b', name: 't.b' }]]);
  assert.equal(c3.revision, c2.revision + 1);
  off.delete('t.b');

  // A restart with a function off (the same data dir) is a new revision too.
  off.add('t.b');
  const r2 = new FunctionRegistry(store);
  r2.hidden = (id) => off.has(id);
  r2.register('t', [def('t.a'), def('t.b')] as never);
  assert.ok(r2.settle() > c2.revision);
  r.discardPending();
  r2.discardPending();
});

test('the log level changes on a pino logger and its children at once', () => {
  const lines: string[] = [];
  const root = pino({ level: 'info' }, { write: (s: string) => void lines.push(s) }) as unknown as Logger;
  const child = root.child({ component: 'x' });
  child.debug({}, 'hidden');
  assert.equal(lines.length, 0);
  assert.equal(setLoggerLevel(root, 'debug'), true);
  assert.equal(loggerLevel(root), 'debug');
  child.debug({}, 'shown');
  assert.equal(lines.length, 1);
  setLoggerLevel(root, 'error');
  child.warn({}, 'hidden again');
  assert.equal(lines.length, 1);
  assert.equal(setLoggerLevel({ info() {} } as unknown as Logger, 'debug'), false, 'a logger without levels is left alone');
  assert.ok(LOG_LEVELS.includes('info'));
});
