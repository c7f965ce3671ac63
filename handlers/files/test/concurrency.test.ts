/**
 * Concurrent writes serialise through the host's lock manager (same lock string for every spelling of a
 * file), and a cancelled or timed-out write leaves the old file or the new one, never a torn one.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { LockManager } from '../../../src/agent/locks.js';
import { call, fakeCtx, grantStore, lockKeys, makeFns, makeWorld, startBlobServer, worldGrants, type Fns, type World } from './harness.js';
import type { GrantStore } from '../../../src/grants/grant-store.js';

let w: World;
let fns: Fns;
let store: GrantStore;

before(async () => {
  w = await makeWorld();
  store = grantStore(worldGrants(w));
  fns = await makeFns(w, { store });
});
after(() => w.cleanup());

/** Runs a call the way the host does: take the function's locks, run, release. */
async function hostCall(locks: LockManager, id: string, args: Record<string, unknown>) {
  const fn = fns.get(id)!;
  const release = await locks.acquireAll(await lockKeys(fn, args, store));
  try {
    return await fn.run(args, fakeCtx());
  } finally {
    release();
  }
}

const noTemps = () => assert.deepEqual(fs.readdirSync(w.docs, { recursive: true }).map(String).filter((n) => n.includes('.aios-')), []);

test('every spelling of a file gets the same lock string', async () => {
  await fs.promises.mkdir(path.join(w.docs, 'logs'));
  await fs.promises.symlink(path.join(w.docs, 'logs'), path.join(w.docs, 'logs-link'));
  const fn = fns.get('files.write_text')!;
  const keys = new Set([
    ...(await lockKeys(fn, { root: 'Documents', path: 'logs/app.log', text: '' }, store)),
    ...(await lockKeys(fn, { root: 'Documents', path: './logs//app.log', text: '' }, store)),
    ...(await lockKeys(fn, { path: path.join(w.docs, 'logs', 'app.log'), text: '' }, store)),
    ...(await lockKeys(fn, { root: 'Documents', path: 'logs-link/app.log', text: '' }, store)),
  ]);
  assert.equal(keys.size, 1, [...keys].join(', '));
  assert.match([...keys][0]!, /^file:\//);
});

test('concurrent appends through the lock manager all land, in some order', async () => {
  const locks = new LockManager();
  const spellings = [
    (i: number) => ({ root: 'Documents', path: 'logs/app.log', text: `line ${i}\n`, mode: 'append' }),
    (i: number) => ({ path: path.join(w.docs, 'logs', 'app.log'), text: `line ${i}\n`, mode: 'append' }),
    (i: number) => ({ root: 'Documents', path: 'logs-link/app.log', text: `line ${i}\n`, mode: 'append' }),
  ];
  await Promise.all(Array.from({ length: 12 }, (_, i) => hostCall(locks, 'files.write_text', spellings[i % 3]!(i))));
  const lines = fs.readFileSync(path.join(w.docs, 'logs', 'app.log'), 'utf8').trim().split('\n').sort();
  assert.deepEqual(lines, Array.from({ length: 12 }, (_, i) => `line ${i}`).sort());
  noTemps();
});

test('concurrent overwrites without locks still never tear a file', async () => {
  const size = 512 * 1024;
  await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      call(fns, 'files.write_bytes', { root: 'Documents', path: 'race.bin', data: Buffer.alloc(size, i + 1).toString('base64'), mode: 'overwrite' }).catch(() => {}),
    ),
  );
  const got = fs.readFileSync(path.join(w.docs, 'race.bin'));
  assert.equal(got.length, size);
  assert.ok(got.every((b) => b === got[0]), 'the file holds exactly one writer\'s bytes');
  noTemps();
});

/** Uploads `size` bytes as a blob, and puts an old file at `target` for the write to replace. */
async function blobOver(srv: Awaited<ReturnType<typeof startBlobServer>>, name: string, size: number, target: string, old: string) {
  const src = path.join(w.base, name);
  fs.writeFileSync(src, Buffer.alloc(size, 0x4e));
  const ref = await srv.client.uploadFile(src, 'application/octet-stream');
  fs.writeFileSync(path.join(w.docs, target), old);
  return ref;
}

test('a write cancelled mid-copy leaves the old file and no temp file', async () => {
  const srv = await startBlobServer(path.join(w.base, 'blobs'));
  try {
    const ref = await blobOver(srv, 'new.bin', 8 * 1024 * 1024, 'target.bin', 'OLD CONTENT');
    const ctx = fakeCtx({
      blobs: srv.client,
      onProgress: (p, c) => {
        if (p.message === 'Writing') c.controller.abort(new DOMException('cancelled by test', 'AbortError'));
      },
    });
    await assert.rejects(call(fns, 'files.write_bytes', { root: 'Documents', path: 'target.bin', blob: ref, mode: 'overwrite' }, ctx), { name: 'AbortError' });
    assert.equal(ctx.committed, false, 'the point of no return was not reached');
    assert.equal(fs.readFileSync(path.join(w.docs, 'target.bin'), 'utf8'), 'OLD CONTENT');
    noTemps();
    assert.deepEqual(fs.readdirSync(path.join(w.dataDir, 'files-staging')), []);
  } finally {
    await srv.close();
  }
});

test('a write that times out during the blob download leaves the old file', async () => {
  const srv = await startBlobServer(path.join(w.base, 'blobs2'));
  try {
    const ref = await blobOver(srv, 'new2.bin', 64 * 1024 * 1024, 'target2.bin', 'OLD');
    let partial = 0;
    // The real client downloads from the real store; the budget runs out once the first bytes have landed.
    const blobs = {
      ...srv.client,
      uploadFile: srv.client.uploadFile.bind(srv.client),
      downloadToFile: (r: typeof ref, to: string, signal?: AbortSignal) => {
        const watch = setInterval(() => {
          const size = fs.existsSync(to) ? fs.statSync(to).size : 0;
          if (size > 0 && size < r.size) {
            partial = size;
            clearInterval(watch);
            ctx.controller.abort(new DOMException('timed out', 'TimeoutError'));
          }
        }, 1);
        return srv.client.downloadToFile(r, to, signal).finally(() => clearInterval(watch));
      },
    };
    const ctx = fakeCtx({ blobs });
    await assert.rejects(call(fns, 'files.write_bytes', { root: 'Documents', path: 'target2.bin', blob: ref, mode: 'overwrite' }, ctx), { name: 'TimeoutError' });
    assert.ok(partial > 0, 'the download was under way when the budget ran out');
    assert.equal(fs.readFileSync(path.join(w.docs, 'target2.bin'), 'utf8'), 'OLD');
    noTemps();
    assert.deepEqual(fs.readdirSync(path.join(w.dataDir, 'files-staging')), []);
  } finally {
    await srv.close();
  }
});
