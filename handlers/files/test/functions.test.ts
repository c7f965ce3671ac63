/** Every files function on a real folder, as a remote caller would use it. */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { WireError } from '../../../src/sdk/index.js';
import { schemaValidator } from '../../../src/protocol/schema-validator.js';
import { strings, type Locale } from '../../../src/i18n/index.js';
import { catalogueDirs, loadHandlerCatalogue } from '../../../src/sdk/instance.js';
import { call, fakeCtx, grantStore, lockKeys, makeFns, makeWorld, resourcesOf, startBlobServer, worldGrants, type Fns, type World } from './harness.js';

let w: World;
let fns: Fns;
let trashHome: string;

before(async () => {
  w = await makeWorld();
  // The trash goes to $HOME/.local/share/Trash: keep it inside the temp world.
  trashHome = path.join(w.base, 'home');
  await fs.promises.mkdir(trashHome);
  process.env['HOME'] = trashHome;
  process.env['XDG_DATA_HOME'] = path.join(trashHome, '.local', 'share');
  fns = await makeFns(w);
});
after(() => w.cleanup());

const rejects = (p: Promise<unknown>, type: string, reason?: string) =>
  assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof WireError, `expected WireError, got ${String(e)}`);
    assert.equal(e.type, type, e.message);
    if (reason) assert.equal(e.details?.['reason'], reason);
    return true;
  });

test('write_bytes: exactly one of data or blob, refused by the input schema (before any prompt)', () => {
  const input = fns.get('files.write_bytes')!.descriptor.input_schema;
  const blob = { blob_id: 'b_1', sha256: 'a'.repeat(64), size: 1, media_type: 'text/plain' };
  assert.deepEqual(schemaValidator.validate(input, { root: 'Documents', path: 'x.bin', data: 'eA==' }), []);
  assert.deepEqual(schemaValidator.validate(input, { root: 'Documents', path: 'x.bin', blob }), []);
  assert.ok(schemaValidator.validate(input, { root: 'Documents', path: 'x.bin' }).length > 0, 'neither');
  assert.ok(schemaValidator.validate(input, { root: 'Documents', path: 'x.bin', data: 'eA==', blob }).length > 0, 'both');
});

test('descriptors: ids, levels and confirmation as documented', () => {
  const levels = Object.fromEntries([...fns.values()].map((f) => [f.descriptor.id, f.descriptor.permission_level]));
  assert.deepEqual(levels, {
    'files.copy': 'high', 'files.delete': 'critical', 'files.list_dir': 'low', 'files.mkdir': 'high', 'files.move': 'high',
    'files.read_bytes': 'medium', 'files.read_text': 'medium', 'files.search': 'low', 'files.stat': 'low',
    'files.write_bytes': 'high', 'files.write_text': 'high',
  });
  assert.equal(fns.get('files.delete')!.descriptor.confirmation, 'always');
  for (const f of fns.values()) {
    assert.equal(f.descriptor.capability_type, 'file');
    assert.equal(f.descriptor.access, 'restricted');
    assert.equal((f.descriptor.input_schema as { additionalProperties?: boolean }).additionalProperties, false);
  }
});

test('write_text creates, refuses to overwrite unless asked, overwrites and appends', async () => {
  const ctx = fakeCtx();
  const out = await call(fns, 'files.write_text', { root: 'Documents', path: 'notes.txt', text: 'hello\n' }, ctx);
  assert.deepEqual(out, { root: 'Documents', path: 'notes.txt', size: 6, created: true, mode: 'create' });
  assert.ok(ctx.committed, 'commit() was called before the write became visible');
  assert.equal(await fs.promises.readFile(path.join(w.docs, 'notes.txt'), 'utf8'), 'hello\n');
  await rejects(call(fns, 'files.write_text', { root: 'Documents', path: 'notes.txt', text: 'x' }), 'execution_failed', 'exists');
  await call(fns, 'files.write_text', { root: 'Documents', path: 'notes.txt', text: 'bye\n', mode: 'overwrite' });
  await call(fns, 'files.write_text', { root: 'Documents', path: 'notes.txt', text: 'more\n', mode: 'append' });
  assert.equal(await fs.promises.readFile(path.join(w.docs, 'notes.txt'), 'utf8'), 'bye\nmore\n');
  const left = (await fs.promises.readdir(w.docs)).filter((n) => n.includes('.aios-'));
  assert.deepEqual(left, [], 'no temp files left behind');
});

test('describe gives one plain sentence for the prompt, from the catalogue, in English and Chinese', async () => {
  assert.ok(loadHandlerCatalogue('files', catalogueDirs('files')), 'handlers/files/i18n is found');
  const say = async (id: string, a: Record<string, unknown>, locale: Locale) => {
    const fn = fns.get(id)!;
    const d = await fn.describe!(a, await resourcesOf(fn, a, grantStore(worldGrants(w))));
    assert.equal(typeof d, 'object', 'a catalogue message, not a hard-coded sentence');
    return strings.render(d as Exclude<typeof d, string>, locale);
  };
  await fs.promises.writeFile(path.join(w.docs, 'report.docx'), Buffer.alloc(14_000));
  const write = { root: 'Documents', path: 'report.docx', text: 'x'.repeat(2000), mode: 'overwrite' };
  assert.equal(await say('files.write_text', write, 'en'), 'Replace report.docx in Documents (14 KB now, 2 KB after)');
  assert.equal(await say('files.write_text', write, 'zh-CN'), '替换 “Documents”中的 report.docx（当前 14 KB，写入后 2 KB）');
  await fs.promises.mkdir(path.join(w.docs, 'old', 'sub'), { recursive: true });
  for (let i = 0; i < 5; i++) await fs.promises.writeFile(path.join(w.docs, 'old', 'sub', `f${i}.txt`), 'x');
  const del = { root: 'Documents', path: 'old', recursive: true };
  assert.equal(await say('files.delete', del, 'en'), 'Move folder old/ in Documents and its 6 entries to the trash');
  assert.equal(await say('files.delete', del, 'zh-CN'), '将 “Documents”中的文件夹 old/ 及其中的 6 个项目 移到回收站');
  assert.equal(await say('files.write_text', { root: 'Documents', path: 'one.txt', text: 'x' }, 'en'), 'Create one.txt in Documents (1 byte)');
});

test('write to a read-only share is refused', async () => {
  await rejects(call(fns, 'files.write_text', { root: 'ReadOnly', path: 'x.txt', text: 'x' }), 'permission_denied', 'read_only_grant');
});

test('read_text: whole, byte range on character boundaries, line range, size cap', async () => {
  await fs.promises.writeFile(path.join(w.docs, 'lines.txt'), 'one\ntwo\nthree\nfour\n');
  const whole = await call(fns, 'files.read_text', { root: 'Documents', path: 'lines.txt' });
  assert.equal(whole['text'], 'one\ntwo\nthree\nfour\n');
  assert.equal(whole['eof'], true);
  const lines = await call(fns, 'files.read_text', { root: 'Documents', path: 'lines.txt', start_line: 2, line_count: 2 });
  assert.equal(lines['text'], 'two\nthree\n');
  assert.equal(lines['offset'], 4);
  await fs.promises.writeFile(path.join(w.docs, 'utf.txt'), 'aé€b');
  const mid = await call(fns, 'files.read_text', { root: 'Documents', path: 'utf.txt', offset: 2, length: 3 });
  assert.equal(mid['text'], '', 'a range that cuts characters drops the broken pieces');
  const r2 = await call(fns, 'files.read_text', { root: 'Documents', path: 'utf.txt', offset: 1, length: 5 });
  assert.equal(r2['text'], 'é€');
  const small = await makeFns(w, { options: { max_text_bytes: 10 } });
  await rejects(call(small, 'files.read_text', { root: 'Documents', path: 'lines.txt' }), 'payload_too_large');
  await fs.promises.writeFile(path.join(w.docs, 'bin.dat'), Buffer.from([0xff, 0xfe, 0x00, 0xc3]));
  await rejects(call(fns, 'files.read_text', { root: 'Documents', path: 'bin.dat' }), 'execution_failed', 'not_utf8');
});

test('read_bytes inline and as a blob; write_bytes from inline data and from a blob', async () => {
  const srv = await startBlobServer(path.join(w.base, 'blobs'));
  try {
    const data = Buffer.from([0, 1, 2, 3, 254, 255]);
    await call(fns, 'files.write_bytes', { root: 'Documents', path: 'b.bin', data: data.toString('base64') });
    const inline = await call(fns, 'files.read_bytes', { root: 'Documents', path: 'b.bin' });
    assert.equal(inline['encoding'], 'base64');
    assert.deepEqual(Buffer.from(inline['data'] as string, 'base64'), data);
    const big = Buffer.alloc(600 * 1024, 7);
    await fs.promises.writeFile(path.join(w.docs, 'big.bin'), big);
    const ctx = fakeCtx({ blobs: srv.client });
    const out = await call(fns, 'files.read_bytes', { root: 'Documents', path: 'big.bin' }, ctx);
    const ref = out['blob'] as { blob_id: string; size: number; sha256: string; media_type: string };
    assert.equal(ref.size, big.length);
    assert.equal(out['data'], undefined);
    await call(fns, 'files.write_bytes', { root: 'Documents', path: 'copy-of-big.bin', blob: ref }, fakeCtx({ blobs: srv.client }));
    assert.deepEqual(await fs.promises.readFile(path.join(w.docs, 'copy-of-big.bin')), big);
    assert.deepEqual(await fs.promises.readdir(path.join(w.dataDir, 'files-staging')), [], 'staging is emptied');
    const bad = { ...ref, sha256: '0'.repeat(64) };
    await rejects(call(fns, 'files.write_bytes', { root: 'Documents', path: 'tampered.bin', blob: bad }, fakeCtx({ blobs: srv.client })), 'execution_failed', 'blob_hash_mismatch');
    assert.equal(fs.existsSync(path.join(w.docs, 'tampered.bin')), false);
  } finally {
    await srv.close();
  }
});

test('list_dir pages, filters and sorts; hidden files are left out', async () => {
  const d = path.join(w.docs, 'list');
  await fs.promises.mkdir(d);
  for (const [n, size] of [['a.pdf', 3], ['b.txt', 1], ['c.pdf', 2], ['.hidden', 1]] as const) await fs.promises.writeFile(path.join(d, n), 'x'.repeat(size));
  const p1 = await call(fns, 'files.list_dir', { root: 'Documents', path: 'list', limit: 2 });
  assert.deepEqual((p1['entries'] as { name: string }[]).map((e) => e.name), ['a.pdf', 'b.txt']);
  assert.equal(p1['hidden_omitted'], 1);
  const p2 = await call(fns, 'files.list_dir', { root: 'Documents', path: 'list', limit: 2, cursor: p1['next_cursor'] });
  assert.deepEqual((p2['entries'] as { name: string }[]).map((e) => e.name), ['c.pdf']);
  assert.equal(p2['next_cursor'], undefined);
  const pdfs = await call(fns, 'files.list_dir', { root: 'Documents', path: 'list', glob: '*.pdf', sort: 'size', order: 'desc' });
  assert.deepEqual((pdfs['entries'] as { name: string }[]).map((e) => e.name), ['a.pdf', 'c.pdf']);
});

test('stat and search', async () => {
  await fs.promises.mkdir(path.join(w.docs, 's', 'deep', 'er'), { recursive: true });
  await fs.promises.writeFile(path.join(w.docs, 's', 'deep', 'er', 'invoice-1.pdf'), 'pdf');
  await fs.promises.writeFile(path.join(w.docs, 's', 'invoice-2.pdf'), 'pdf');
  const st = await call(fns, 'files.stat', { root: 'Documents', path: 's/invoice-2.pdf' });
  assert.equal(st['type'], 'file');
  assert.equal(st['size'], 3);
  assert.equal(st['media_type'], 'application/pdf');
  const found = await call(fns, 'files.search', { root: 'Documents', path: 's', pattern: 'invoice-*.pdf' });
  assert.deepEqual((found['matches'] as { path: string }[]).map((m) => m.path), ['s/invoice-2.pdf', 's/deep/er/invoice-1.pdf']);
  const shallow = await call(fns, 'files.search', { root: 'Documents', path: 's', pattern: '*.pdf', max_depth: 2 });
  assert.deepEqual((shallow['matches'] as { path: string }[]).map((m) => m.path), ['s/invoice-2.pdf']);
  const capped = await call(fns, 'files.search', { root: 'Documents', path: 's', pattern: '*', max_results: 1 });
  assert.equal(capped['truncated'], true);
});

test('mkdir, move, copy', async () => {
  const mk = await call(fns, 'files.mkdir', { root: 'Documents', path: 'm/n/o', parents: true });
  assert.equal(mk['created'], true);
  assert.ok(fs.statSync(path.join(w.docs, 'm/n/o')).isDirectory());
  await rejects(call(fns, 'files.mkdir', { root: 'Documents', path: 'p/q' }), 'execution_failed', 'parent_not_found');
  await fs.promises.writeFile(path.join(w.docs, 'm', 'f.txt'), 'F');
  await call(fns, 'files.move', { root: 'Documents', path: 'm/f.txt', to_path: 'm/n/g.txt' });
  assert.equal(fs.readFileSync(path.join(w.docs, 'm/n/g.txt'), 'utf8'), 'F');
  assert.equal(fs.existsSync(path.join(w.docs, 'm/f.txt')), false);
  await fs.promises.writeFile(path.join(w.docs, 'm', 'h.txt'), 'H');
  await rejects(call(fns, 'files.move', { root: 'Documents', path: 'm/h.txt', to_path: 'm/n/g.txt' }), 'execution_failed', 'exists');
  await call(fns, 'files.move', { root: 'Documents', path: 'm/h.txt', to_path: 'm/n/g.txt', overwrite: true });
  assert.equal(fs.readFileSync(path.join(w.docs, 'm/n/g.txt'), 'utf8'), 'H');
  const cp = await call(fns, 'files.copy', { root: 'Documents', path: 'm', to_path: 'm-copy', recursive: true });
  assert.equal(cp['type'], 'directory');
  assert.equal(fs.readFileSync(path.join(w.docs, 'm-copy/n/g.txt'), 'utf8'), 'H');
  await rejects(call(fns, 'files.copy', { root: 'Documents', path: 'm', to_path: 'm-copy2' }), 'execution_failed', 'is_folder');
  await call(fns, 'files.copy', { root: 'Documents', path: 'm/n/g.txt', to_path: 'g2.txt' });
  assert.equal(fs.readFileSync(path.join(w.docs, 'g2.txt'), 'utf8'), 'H');
  await rejects(call(fns, 'files.move', { root: 'Documents', path: 'm', to_path: 'm/n/inside' }), 'execution_failed', 'into_itself');
});

test('a recursive copy makes plain files (0644) and folders (0755), and keeps to max_write_bytes', async () => {
  await fs.promises.mkdir(path.join(w.docs, 'tools', 'bin'), { recursive: true });
  await fs.promises.writeFile(path.join(w.docs, 'tools', 'bin', 'run.txt'), 'echo hi', { mode: 0o777 });
  await fs.promises.chmod(path.join(w.docs, 'tools', 'bin', 'run.txt'), 0o777);
  await fs.promises.chmod(path.join(w.docs, 'tools'), 0o777);
  await call(fns, 'files.copy', { root: 'Documents', path: 'tools', to_path: 'tools-copy', recursive: true });
  assert.equal(fs.statSync(path.join(w.docs, 'tools-copy', 'bin', 'run.txt')).mode & 0o777, 0o644, 'never executable');
  assert.equal(fs.statSync(path.join(w.docs, 'tools-copy')).mode & 0o777, 0o755);
  const small = await makeFns(w, { options: { max_write_bytes: 4 } });
  await assert.rejects(call(small, 'files.copy', { root: 'Documents', path: 'tools', to_path: 'tools-big', recursive: true }), (e: unknown) => {
    assert.ok(e instanceof WireError && e.type === 'payload_too_large', String(e));
    assert.equal(e.details?.['name'], 'run.txt');
    return true;
  });
  assert.equal(fs.existsSync(path.join(w.docs, 'tools-big')), false, 'nothing was copied');
});

test('delete goes to the trash; folders only with recursive', async () => {
  await fs.promises.mkdir(path.join(w.docs, 'gone', 'sub'), { recursive: true });
  await fs.promises.writeFile(path.join(w.docs, 'gone', 'sub', 'x.txt'), 'x');
  await rejects(call(fns, 'files.delete', { root: 'Documents', path: 'gone' }), 'execution_failed', 'not_empty');
  assert.ok(fs.existsSync(path.join(w.docs, 'gone', 'sub', 'x.txt')));
  const out = await call(fns, 'files.delete', { root: 'Documents', path: 'gone', recursive: true });
  assert.equal(out['trashed'], true);
  assert.equal(out['entries'], 2);
  assert.equal(fs.existsSync(path.join(w.docs, 'gone')), false);
  const trashed = await fs.promises.readdir(path.join(trashHome, '.local', 'share', 'Trash', 'files'));
  assert.equal(trashed.length, 1, 'the folder is in the trash, restorable');
  await rejects(call(fns, 'files.delete', { root: 'Documents', path: '' }), 'permission_denied', 'root_itself');
  const perm = await makeFns(w, { options: { use_trash: false } });
  await fs.promises.writeFile(path.join(w.docs, 'perm.txt'), 'p');
  const o2 = await call(perm, 'files.delete', { root: 'Documents', path: 'perm.txt' });
  assert.equal(o2['trashed'], false);
  assert.equal(fs.existsSync(path.join(w.docs, 'perm.txt')), false);
});

test('what the OS refuses is said as a wire error: a write into a folder the OS will not let anyone change', async (t) => {
  // Root ignores permission bits; an immutable folder (chattr +i) is refused even to root.
  const ro = path.join(w.docs, 'immutable');
  await fs.promises.mkdir(ro);
  const { spawnSync } = await import('node:child_process');
  if (spawnSync('chattr', ['+i', ro]).status !== 0) {
    t.skip('chattr +i is not supported on this file system');
    return;
  }
  try {
    await rejects(call(fns, 'files.write_text', { root: 'Documents', path: 'immutable/new.txt', text: 'x' }), 'permission_denied', 'os_denied');
  } finally {
    spawnSync('chattr', ['-i', ro]);
  }
});

test('errno codes map to wire errors; other errors pass through', async () => {
  const { fromOsError } = await import('../paths.js');
  const err = (code: string) => Object.assign(new Error(code), { code });
  const as = (code: string) => fromOsError(err(code)) as WireError;
  assert.equal(as('EACCES').type, 'permission_denied');
  assert.equal(as('EROFS').details?.['reason'], 'read_only_fs');
  assert.equal(as('ENOSPC').details?.['reason'], 'no_space');
  assert.equal(as('EBUSY').retryable, true);
  const other = new Error('bug');
  assert.equal(fromOsError(other), other);
  const wire = new WireError('timeout', 't');
  assert.equal(fromOsError(wire), wire);
});

test('with nested shared folders, consent and locks name the folder the call really uses (the innermost)', async () => {
  const inner = path.join(w.docs, 'nested-share');
  await fs.promises.mkdir(inner, { recursive: true });
  const g = worldGrants(w);
  const store = grantStore({ files: [...(g['files'] ?? []), { path: inner, access: 'read' }] });
  const nested = await makeFns(w, { store });
  const read = nested.get('files.read_text')!;
  const abs = path.join(inner, 'x.txt');
  assert.deepEqual((await resourcesOf(read, { path: abs }, store)).map((r) => [r.kind, r.id, r.label]), [['files', inner, 'nested-share']], 'the nested grant, as locate() picks it');
  assert.deepEqual((await resourcesOf(read, { path: path.join(w.docs, 'y.txt') }, store)).map((r) => r.id), [w.docs]);
  // A write's lock names the file by its real path, the same whichever folder it is named through.
  const write = nested.get('files.write_text')!;
  const real = path.join(await fs.promises.realpath(inner), 'x.txt');
  await assert.rejects(lockKeys(write, { path: abs }, store), (e: Error & { type?: string }) => e.type === 'permission_denied', 'the innermost grant is read-only');
  assert.deepEqual(await lockKeys(write, { path: path.join('nested-share', 'x.txt'), root: 'Documents' }, store), [`file:${real}`]);
});

test('a listing over max_walk_entries fails like a recursive copy or delete does (too_many_entries)', async () => {
  const many = path.join(w.docs, 'many');
  await fs.promises.mkdir(many);
  for (let i = 0; i < 5; i++) await fs.promises.writeFile(path.join(many, `f${i}.txt`), 'x');
  const small = await makeFns(w, { options: { max_walk_entries: 3 } });
  await rejects(call(small, 'files.list_dir', { root: 'Documents', path: 'many' }), 'execution_failed', 'too_many_entries');
  await rejects(call(small, 'files.copy', { root: 'Documents', path: 'many', to_path: 'many2', recursive: true }), 'execution_failed', 'too_many_entries');
});
