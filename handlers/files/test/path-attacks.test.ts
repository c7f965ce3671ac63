/**
 * The path-attack battery: each case builds a real file-system setup in a temp folder, makes one call a
 * hostile remote caller could make, and must end in `permission_denied`. After each case, everything
 * outside the shared folders is compared with a snapshot taken before it: nothing read back, changed or
 * created there.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { WireError } from '../../../src/sdk/index.js';
import { call, fakeCtx, grantStore, makeFns, makeWorld, snapshot, type Fns, type World } from './harness.js';
import { resolvePath, type PathContext } from '../paths.js';
import { openFileForRead, withDir } from '../handles.js';
import { atomicWrite } from '../atomic-write.js';
import { DEFAULT_LIMITS } from '../limits.js';
import { rootsOf } from '../roots.js';
import { writeAll } from '../io.js';

let w: World;
let fns: Fns;
let pctx: PathContext;

before(async () => {
  w = await makeWorld();
  fns = await makeFns(w);
  pctx = { roots: rootsOf(grantStore({ files: [{ path: w.docs, access: 'read_write' }] }).list('files')), limits: DEFAULT_LIMITS };
});
after(() => w.cleanup());

interface Case {
  name: string;
  setup?: (w: World) => Promise<void> | void;
  run: (w: World) => Promise<unknown>;
  reason?: string;
}

const D = (p: string) => ({ root: 'Documents', path: p });
const read = (args: Record<string, unknown>) => call(fns, 'files.read_text', args);
const write = (args: Record<string, unknown>) => call(fns, 'files.write_text', { text: 'pwned', ...args });
const link = (target: string, at: string) => fs.promises.symlink(target, at);

const cases: Case[] = [
  { name: '../ out of the root', run: () => read(D('../../outside/secret.txt')), reason: 'parent_segment' },
  { name: '.. hidden in the middle', run: () => read(D('a/../../../outside/secret.txt')), reason: 'parent_segment' },
  { name: 'absolute path elsewhere', run: (w) => read({ path: w.sentinel }), reason: 'outside_root' },
  { name: 'absolute path elsewhere with a root name', run: (w) => read({ root: 'Documents', path: w.sentinel }), reason: 'outside_root' },
  { name: 'symlink to a file outside', setup: (w) => link(w.sentinel, path.join(w.docs, 'innocent.txt')), run: () => read(D('innocent.txt')), reason: 'symlink_outside' },
  { name: 'symlinked parent folder pointing outside (read)', setup: (w) => link(w.outside, path.join(w.docs, 'linkdir')), run: () => read(D('linkdir/secret.txt')), reason: 'symlink_outside' },
  { name: 'symlinked parent folder pointing outside (create)', run: () => write(D('linkdir/planted.txt')), reason: 'symlink_outside' },
  { name: 'overwrite through a symlink to a file outside', setup: (w) => link(w.sentinel, path.join(w.docs, 'evil.txt')), run: () => write({ ...D('evil.txt'), mode: 'overwrite' }), reason: 'symlink_outside' },
  { name: 'dangling symlink to a new file outside', setup: (w) => link(path.join(w.outside, 'created.txt'), path.join(w.docs, 'dangling.txt')), run: () => write(D('dangling.txt')), reason: 'dangling_symlink' },
  { name: 'symlink loop of two', setup: async (w) => { await link(path.join(w.docs, 'loopB'), path.join(w.docs, 'loopA')); await link(path.join(w.docs, 'loopA'), path.join(w.docs, 'loopB')); }, run: () => read(D('loopA')), reason: 'symlink_loop' },
  { name: 'self-referencing symlink as a parent', setup: (w) => link('self', path.join(w.docs, 'self')), run: () => write(D('self/x.txt')), reason: 'symlink_loop' },
  { name: 'NUL byte', run: () => read(D('secret.txt\0.png')), reason: 'nul_byte' },
  { name: 'Windows drive path C:\\', run: () => read({ path: 'C:\\Windows\\System32\\drivers\\etc\\hosts' }), reason: 'drive_path' },
  { name: 'Windows drive path C:/', run: () => read(D('C:/Users/x/secret.txt')), reason: 'drive_path' },
  { name: 'UNC path \\\\server\\share', run: () => read({ path: '\\\\server\\share\\secret.txt' }), reason: 'unc_path' },
  { name: 'UNC path with forward slashes', run: () => read({ path: '//server/share/secret.txt' }), reason: 'unc_path' },
  { name: 'Windows device namespace \\\\.\\PhysicalDrive0', run: () => call(fns, 'files.read_bytes', { path: '\\\\.\\PhysicalDrive0' }), reason: 'device_namespace' },
  { name: 'Windows raw namespace \\\\?\\C:\\', run: () => read({ path: '\\\\?\\C:\\secret.txt' }), reason: 'device_namespace' },
  { name: 'alternate data stream file.txt:stream', setup: (w) => fs.promises.writeFile(path.join(w.docs, 'file.txt'), 'x'), run: () => write({ ...D('file.txt:hidden'), mode: 'overwrite' }), reason: 'alternate_data_stream' },
  { name: 'device file /dev/zero', run: () => call(fns, 'files.read_bytes', { path: '/dev/zero' }), reason: 'outside_root' },
  { name: '/proc/self/environ', run: () => read({ path: '/proc/self/environ' }), reason: 'outside_root' },
  { name: 'symlink to /proc/self/environ', setup: (w) => link('/proc/self/environ', path.join(w.docs, 'env.txt')), run: () => read(D('env.txt')), reason: 'symlink_outside' },
  { name: 'symlink to /dev/zero', setup: (w) => link('/dev/zero', path.join(w.docs, 'zero.bin')), run: () => call(fns, 'files.read_bytes', D('zero.bin')), reason: 'symlink_outside' },
  { name: 'FIFO inside the root', setup: (w) => { execFileSync('mkfifo', [path.join(w.docs, 'pipe')]); }, run: () => read(D('pipe')), reason: 'special_file' },
  { name: 'hard link to a file outside (read)', setup: (w) => fs.promises.link(w.sentinel, path.join(w.docs, 'hard.txt')), run: () => read(D('hard.txt')), reason: 'hardlink' },
  { name: 'hard link to a file outside (overwrite)', run: () => write({ ...D('hard.txt'), mode: 'append' }), reason: 'hardlink' },
  { name: 'hidden file', setup: async (w) => { await fs.promises.mkdir(path.join(w.docs, '.ssh')); await fs.promises.writeFile(path.join(w.docs, '.ssh', 'id_rsa'), 'KEY'); }, run: () => read(D('.ssh/id_rsa')), reason: 'hidden' },
  { name: 'hidden folder reached through an innocent symlink', setup: (w) => link(path.join(w.docs, '.ssh'), path.join(w.docs, 'keys')), run: () => read(D('keys/id_rsa')), reason: 'hidden' },
  { name: 'denied extension .sh', run: () => write(D('install.sh')), reason: 'denied_extension' },
  { name: 'denied extension in upper case (.EXE)', run: () => write(D('SETUP.EXE')), reason: 'denied_extension' },
  { name: 'denied extension with a full-width dot (evil．exe)', run: () => write(D('evil\uff0eexe')), reason: 'denied_extension' },
  { name: 'trailing dot hides an extension (evil.exe.)', run: () => write(D('evil.exe.')), reason: 'trailing_dot_or_space' },
  { name: 'right-to-left override disguises an extension', run: () => write(D('invoice\u202Etxt.exe')), reason: 'control_character' },
  { name: 'rename a text file to a shortcut', setup: (w) => fs.promises.writeFile(path.join(w.docs, 'plain.txt'), 'x'), run: () => call(fns, 'files.move', { ...D('plain.txt'), to_path: 'Startup.lnk' }), reason: 'denied_extension' },
  { name: 'case variant of the root name', run: () => read({ root: 'documents', path: 'file.txt' }), reason: 'unknown_root' },
  { name: 'case variant of the root in an absolute path', run: (w) => read({ path: path.join(path.dirname(w.docs), 'DOCUMENTS', 'file.txt') }), reason: 'outside_root' },
  { name: 'NFD spelling of an NFC root path', run: async (w) => {
    const nfc = path.join(w.base, 'shared', 'Caf\u00e9');
    await fs.promises.mkdir(nfc);
    await fs.promises.writeFile(path.join(nfc, 'menu.txt'), 'menu');
    const f = await makeFns(w, { grants: { files: [{ path: nfc, access: 'read' }] } });
    return call(f, 'files.read_text', { path: path.join(w.base, 'shared', 'Cafe\u0301', 'menu.txt') });
  }, reason: 'outside_root' },
  { name: 'Windows device name CON', run: () => write(D('con.txt')), reason: 'reserved_device_name' },
  { name: 'macOS resource fork', run: () => read(D('file.txt/..namedfork/rsrc')), reason: 'named_fork' },
  { name: 'backslash traversal on POSIX', run: () => read(D('..\\..\\outside\\secret.txt')), reason: 'backslash' },
  { name: 'move a file out of the root', run: (w) => call(fns, 'files.move', { ...D('file.txt'), to_path: path.join(w.outside, 'stolen.txt') }), reason: 'outside_root' },
  { name: 'copy an outside file in through a symlink', run: () => call(fns, 'files.copy', { ...D('innocent.txt'), to_path: 'loot.txt' }), reason: 'symlink_outside' },
  { name: 'delete through a symlinked folder', run: () => call(fns, 'files.delete', { ...D('linkdir'), recursive: true }), reason: 'symlink_outside' },
  { name: 'mkdir through a symlinked folder', run: () => call(fns, 'files.mkdir', { ...D('linkdir/sub/dir'), parents: true }), reason: 'symlink_outside' },
  { name: 'list a folder outside through a symlink', run: () => call(fns, 'files.list_dir', D('linkdir')), reason: 'symlink_outside' },
  { name: 'search outside through a symlink', run: () => call(fns, 'files.search', { ...D('linkdir'), pattern: '*' }), reason: 'symlink_outside' },
  { name: 'write to a read-only share', run: () => call(fns, 'files.write_text', { root: 'ReadOnly', path: 'readme.txt', text: 'x', mode: 'overwrite' }), reason: 'read_only_grant' },
  {
    name: 'folder swapped for a symlink between check and open (read)',
    setup: async (w) => {
      await fs.promises.mkdir(path.join(w.docs, 'swap'));
      await fs.promises.writeFile(path.join(w.docs, 'swap', 'secret.txt'), 'inside');
    },
    run: async (w) => {
      const r = await resolvePath(pctx, D('swap/secret.txt'), { need: 'read', mustExist: true });
      await fs.promises.rename(path.join(w.docs, 'swap'), path.join(w.docs, 'swap-old'));
      await link(w.outside, path.join(w.docs, 'swap'));
      const { fh } = await openFileForRead(r.real, r.rootReal);
      await fh.close();
      throw new Error('opened a swapped file');
    },
    reason: 'changed_during_open',
  },
  {
    name: 'folder swapped for a symlink between check and write',
    setup: async (w) => {
      await fs.promises.mkdir(path.join(w.docs, 'swapw'));
    },
    run: async (w) => {
      const r = await resolvePath(pctx, D('swapw/planted.txt'), { need: 'write', mustExist: false });
      await fs.promises.rename(path.join(w.docs, 'swapw'), path.join(w.docs, 'swapw-old'));
      await link(w.outside, path.join(w.docs, 'swapw'));
      return withDir(r.parentReal, r.rootReal, (dir) =>
        atomicWrite({ dir, name: r.name, mode: 'create', ctx: fakeCtx(), fill: async (fh, off) => { await writeAll(fh, Buffer.from('pwned'), off); return 5; } }),
      );
    },
    reason: 'changed_during_open',
  },
  {
    name: 'folder swapped after it was opened, before the rename',
    setup: async (w) => {
      await fs.promises.mkdir(path.join(w.docs, 'swapr'));
    },
    run: async (w) => {
      const r = await resolvePath(pctx, D('swapr/planted.txt'), { need: 'write', mustExist: false });
      return withDir(r.parentReal, r.rootReal, (dir) =>
        atomicWrite({
          dir, name: r.name, mode: 'create', ctx: fakeCtx(),
          fill: async (fh, off) => {
            await fs.promises.rename(path.join(w.docs, 'swapr'), path.join(w.docs, 'swapr-old'));
            await link(w.outside, path.join(w.docs, 'swapr'));
            await writeAll(fh, Buffer.from('pwned'), off);
            return 5;
          },
        }),
      );
    },
    reason: 'changed_during_open',
  },
];

test('the battery has at least 25 distinct cases', () => {
  assert.ok(cases.length >= 25, `only ${cases.length} cases`);
  assert.equal(new Set(cases.map((c) => c.name)).size, cases.length);
});

for (const c of cases) {
  test(`path attack: ${c.name}`, async () => {
    await c.setup?.(w);
    const outsideBefore = await snapshot(w.outside);
    const baseBefore = (await fs.promises.readdir(w.base)).sort();
    const sentinelBefore = await fs.promises.readFile(w.sentinel, 'utf8');
    await assert.rejects(c.run(w), (e: unknown) => {
      assert.ok(e instanceof WireError, `expected permission_denied, got ${String(e)}`);
      assert.equal(e.type, 'permission_denied', `${e.type}: ${e.message}`);
      if (c.reason) assert.equal(e.details?.['reason'], c.reason, e.message);
      assert.ok(!e.message.includes('TOP SECRET'));
      return true;
    });
    assert.deepEqual(await snapshot(w.outside), outsideBefore, 'nothing outside the root changed');
    assert.deepEqual((await fs.promises.readdir(w.base)).sort(), baseBefore, 'nothing was created next to the roots');
    assert.equal(await fs.promises.readFile(w.sentinel, 'utf8'), sentinelBefore);
  });
}

test('copying a folder that holds a link to the outside skips the link', async () => {
  await fs.promises.mkdir(path.join(w.docs, 'tree'));
  await fs.promises.writeFile(path.join(w.docs, 'tree', 'ok.txt'), 'ok');
  await link(w.sentinel, path.join(w.docs, 'tree', 'out.txt'));
  const out = await call(fns, 'files.copy', { ...D('tree'), to_path: 'tree-copy', recursive: true });
  assert.equal(out['skipped'], 1);
  assert.deepEqual(fs.readdirSync(path.join(w.docs, 'tree-copy')), ['ok.txt']);
});
