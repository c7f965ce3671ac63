/**
 * The files handler against the CLI-started bridge and agent on a real shared folder: every function
 * through the bridge, and a large file written and read back through blobs with `invoke --blob` and
 * `--save-blob`.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync, createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { cliRun, processStack, tempDir } from '../helpers/stack.js';

type Stack = Awaited<ReturnType<typeof processStack>>;
const sha = (f: string) => createHash('sha256').update(readFileSync(f)).digest('hex');

describe('files.* through the CLI-started bridge and agent', () => {
  let s: Stack;
  let shared: string;
  let outside: string;
  const call = async (fn: string, args: Record<string, unknown>) => (await s.client.call(fn, { root: 'Shared', ...args })).record.outcome!;
  before(async () => {
    const base = tempDir();
    shared = join(base, 'shared');
    outside = join(base, 'outside.txt');
    mkdirSync(join(shared, 'docs'), { recursive: true });
    writeFileSync(join(shared, 'docs', 'notes.txt'), 'line one\nline two\nline three\n');
    writeFileSync(outside, 'not shared');
    s = await processStack({
      agent: {
        grants: { files: [{ path: shared, access: 'read_write', name: 'Shared' }] },
        // The administrator pre-allows the high-risk writes for this QA box; delete (critical) still asks.
        policy: { 'files.write_text': 'allow', 'files.write_bytes': 'allow', 'files.mkdir': 'allow', 'files.move': 'allow', 'files.copy': 'allow' },
        confirmations: { provider: 'none' },
      },
    });
  });
  after(() => s.stop());

  test('read-only functions: list_dir, stat, search, read_text, read_bytes', async () => {
    const list = await call('files.list_dir', { path: 'docs' });
    assert.equal(list.state, 'completed');
    assert.deepEqual((list.output as { entries: { name: string }[] }).entries.map((e) => e.name), ['notes.txt']);
    const st = await call('files.stat', { path: 'docs/notes.txt' });
    assert.equal((st.output as { size: number }).size, 29);
    const found = await call('files.search', { pattern: '*.txt' });
    assert.match(JSON.stringify(found.output), /notes\.txt/);
    const text = await call('files.read_text', { path: 'docs/notes.txt', start_line: 2, line_count: 1 });
    assert.match(JSON.stringify(text.output), /line two/);
    assert.doesNotMatch(JSON.stringify(text.output), /line one/);
    const bytes = await call('files.read_bytes', { path: 'docs/notes.txt' });
    assert.equal(Buffer.from((bytes.output as { data: string }).data, 'base64').toString(), 'line one\nline two\nline three\n');
  });

  test('writes: write_text (refuses to overwrite unless asked), write_bytes, mkdir, copy, move', async () => {
    assert.equal((await call('files.write_text', { path: 'new.txt', text: 'v1' })).state, 'completed');
    const again = await call('files.write_text', { path: 'new.txt', text: 'v2' });
    assert.equal(again.state, 'failed');
    assert.equal(readFileSync(join(shared, 'new.txt'), 'utf8'), 'v1');
    assert.equal((await call('files.write_text', { path: 'new.txt', text: 'v2', mode: 'overwrite' })).state, 'completed');
    assert.equal(readFileSync(join(shared, 'new.txt'), 'utf8'), 'v2');
    assert.equal((await call('files.write_bytes', { path: 'b.bin', encoding: 'base64', data: Buffer.from([1, 2, 3]).toString('base64') })).state, 'completed');
    assert.deepEqual([...readFileSync(join(shared, 'b.bin'))], [1, 2, 3]);
    assert.equal((await call('files.mkdir', { path: 'a/b', parents: true })).state, 'completed');
    assert.equal((await call('files.copy', { path: 'new.txt', to_path: 'a/b/copy.txt' })).state, 'completed');
    assert.equal((await call('files.move', { path: 'b.bin', to_path: 'a/moved.bin' })).state, 'completed');
    assert.ok(existsSync(join(shared, 'a', 'b', 'copy.txt')));
    assert.ok(existsSync(join(shared, 'a', 'moved.bin')) && !existsSync(join(shared, 'b.bin')));
  });

  test('delete is critical: without a way to ask the user it is refused and nothing is deleted', async () => {
    const o = await call('files.delete', { path: 'new.txt' });
    assert.equal(o.state, 'rejected');
    assert.equal(o.error?.type, 'confirmation_unavailable');
    assert.ok(existsSync(join(shared, 'new.txt')));
  });

  test('paths outside the shared folder are refused and the outside file is untouched', async () => {
    const o = await s.client.call('files.write_text', { path: outside, text: 'pwned', mode: 'overwrite' });
    assert.equal(o.record.outcome?.error?.type, 'permission_denied');
    assert.equal(readFileSync(outside, 'utf8'), 'not shared');
  });

  test('a 24 MiB file goes up with invoke --blob and comes back with --save-blob, byte for byte', async () => {
    const dir = tempDir();
    const src = join(dir, 'big.bin');
    await new Promise<void>((resolve, reject) => {
      const w = createWriteStream(src);
      for (let i = 0; i < 24; i++) w.write(randomBytes(1024 * 1024));
      w.end();
      w.on('finish', resolve);
      w.on('error', reject);
    });
    const common = ['--bridge', s.url, '--token', s.tokens.runtime, '--workspace', 'ws_t', '--device', 'dev_t'];
    const up = await cliRun(['invoke', 'files.write_bytes', '--args', '{"root":"Shared","path":"big.bin"}', '--blob', 'blob=' + src, ...common]);
    assert.equal(up.code, 0, up.out + up.err);
    assert.equal(sha(join(shared, 'big.bin')), sha(src));
    const dst = join(dir, 'back.bin');
    const down = await cliRun(['invoke', 'files.read_bytes', '--args', '{"root":"Shared","path":"big.bin"}', '--save-blob', dst, ...common]);
    assert.equal(down.code, 0, down.out + down.err);
    assert.match(down.err, /saved blob/);
    assert.equal(sha(dst), sha(src));
  });
});
