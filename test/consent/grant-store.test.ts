/**
 * The live grant store on its own: kinds declared by handlers, config checked per kind (naming the key),
 * find by alias / id / `*`, the admin ceiling, the user's changes persisted in the data folder and seen
 * again after a restart, change events.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from '@sinclair/typebox';
import { GrantStore, GrantError } from '../../src/grants/grant-store.js';
import { defineGrantKind } from '../../src/sdk/index.js';
import { filesGrants } from '../../handlers/files/grants.js';
import { tempDir } from './helpers.js';

const ports = defineGrantKind({
  kind: 'ports',
  entry: Type.Union([Type.String({ minLength: 1 }), Type.Object({ alias: Type.Optional(Type.String()), path: Type.String(), ask: Type.Optional(Type.Literal('always')) }, { additionalProperties: false })]),
  normalize: (e) => (typeof e === 'string' ? { id: e } : { id: e.path, alias: e.alias, ask: e.ask }),
});

function store(dataDir?: string): GrantStore {
  const s = new GrantStore({ dataDir });
  s.registerKinds('porthandler', [ports]);
  s.registerKinds('files', [filesGrants]);
  return s;
}

test('config problems name the key; nothing is applied when one is wrong', () => {
  const s = store();
  assert.deepEqual(s.setConfig({ ports: ['/dev/a'] }), []);
  const problems = s.setConfig({ ports: ['/dev/b', { path: 7 }], printers: ['x'], files: [{ path: 'rel/dir', access: 'read' }] });
  assert.equal(problems.length, 3, problems.join('\n'));
  assert.match(problems[0]!, /^grants\.ports\[1\]: /);
  assert.match(problems[1]!, /^grants\.printers: unknown grant kind .*known kinds: files, ports/);
  assert.match(problems[2]!, /^grants\.files\[0\]: path must be an absolute path/);
  assert.deepEqual(s.list('ports').map((g) => g.id), ['/dev/a'], 'the earlier config still stands');
  assert.match(s.setConfig({ ports: [{ alias: 'x', path: '/dev/1' }, { alias: 'x', path: '/dev/2' }] })[0]!, /two grants are named "x"/);
  assert.match(s.setConfig({ files: [{ path: '/sys/class', access: 'read' }] })[0]!, /grants\.files\[0\]: .*device or kernel folder/);
});

test('a kind belongs to one handler', () => {
  const s = store();
  assert.throws(() => s.registerKinds('other', [ports]), /declared by both porthandler and other/);
});

test('find: alias first, then id (through covers), then a * grant', () => {
  const s = store();
  assert.deepEqual(s.setConfig({ ports: [{ alias: 'scale', path: '/dev/ttyUSB0' }], files: [{ path: '/srv/share', access: 'read', alias: 'Share' }] }), []);
  assert.equal(s.find('ports', 'scale')?.id, '/dev/ttyUSB0');
  assert.equal(s.find('ports', '/dev/ttyUSB0')?.alias, 'scale');
  assert.equal(s.find('ports', '/dev/ttyUSB1'), undefined);
  assert.equal(s.find('files', '/srv/share/a/b.txt')?.alias, 'Share', 'a folder covers what is inside it');
  assert.equal(s.find('files', '/srv/shared'), undefined, 'a sibling with the same prefix is not inside');
  assert.deepEqual(s.setConfig({ ports: ['*'] }), []);
  assert.deepEqual(s.find('ports', '/dev/ttyS3'), { kind: 'ports', id: '/dev/ttyS3', source: 'config' });
  assert.deepEqual(s.check({ kind: 'ports', id: '/dev/ttyS3' }, true), { grant: { kind: 'ports', id: '*', source: 'config' } });
  assert.equal(s.check({ kind: 'nobody', id: 'x' }, false), undefined, 'a kind nobody declared is never granted, never refused');
});

test('read-only grants refuse writes; ask: always is carried', () => {
  const s = store();
  assert.deepEqual(s.setConfig({ files: [{ path: '/srv/ro', access: 'read' }], ports: [{ path: '/dev/m', ask: 'always' }] }), []);
  assert.deepEqual(s.check({ kind: 'files', id: '/srv/ro' }, true), { refused: '/srv/ro is shared read-only.' });
  assert.ok('grant' in s.check({ kind: 'files', id: '/srv/ro' }, false)!);
  const c = s.check({ kind: 'ports', id: '/dev/m' }, true);
  assert.ok(c && 'grant' in c && c.grant.ask === 'always');
});

test('the admin config is a ceiling: the user narrows it or adds inside it; a kind it leaves out is the user\'s', () => {
  const dir = tempDir();
  try {
    const s = store(dir.dir);
    assert.deepEqual(s.setConfig({ files: [{ path: '/srv/share', access: 'read' }] }), []);
    let changes = 0;
    s.on('change', () => changes++);
    assert.throws(() => s.add('files', { path: '/srv/other', access: 'read' }), (e: Error) => e instanceof GrantError && /only narrow/.test(e.message));
    assert.throws(() => s.add('files', { path: '/srv/share/sub', access: 'read_write' }), /for writing/, 'read-only stays read-only');
    const sub = s.add('files', { path: '/srv/share/sub', access: 'read', alias: 'Sub' });
    assert.equal(sub.source, 'user');
    assert.ok(s.remove('files', '/srv/share'), 'the configured folder can be removed (narrowed)');
    assert.deepEqual(s.list('files').map((g) => g.alias), ['Sub']);
    s.add('ports', '/dev/anything');
    assert.throws(() => s.add('ports', { path: '/dev/other', alias: 'Sub2' }) && s.add('ports', { path: '/dev/x', alias: 'Sub2' }), /already named "Sub2"/);
    assert.throws(() => s.add('nosuch', 'x'), /unknown grant kind/);
    assert.ok(changes >= 4);

    // A restart: the user's changes come back from the data folder, checked against the config again.
    const again = store(dir.dir);
    assert.deepEqual(again.setConfig({ files: [{ path: '/srv/share', access: 'read' }] }), []);
    assert.deepEqual(again.list('files').map((g) => g.alias), ['Sub']);
    assert.deepEqual(again.list('ports').map((g) => g.id).sort(), ['/dev/anything', '/dev/other']);
    // The admin narrowed the config meanwhile: a user grant outside it no longer counts.
    const narrowed = store(dir.dir);
    assert.deepEqual(narrowed.setConfig({ files: [{ path: '/srv/elsewhere', access: 'read' }] }), []);
    assert.deepEqual(narrowed.list('files').map((g) => g.id), ['/srv/elsewhere']);
    // `grants.<kind>: []` closes a kind to the user.
    const closed = store(dir.dir);
    assert.deepEqual(closed.setConfig({ ports: [] }), []);
    assert.deepEqual(closed.list('ports'), []);
    assert.throws(() => closed.add('ports', '/dev/new'), /only narrow/);
  } finally {
    dir.cleanup();
  }
});
