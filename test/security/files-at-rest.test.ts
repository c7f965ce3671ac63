/**
 * Secrets at rest (issue 13, Medium 3): every file that holds call data, tokens or keys is 0600 and
 * every data folder 0700, whatever the umask; a data folder made 0755 first is refused when this program
 * did not create it, and tightened when it did. Run with a loose umask (0022) so the modes come from the
 * code, not from the environment.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cli, cliRun, inProcessStack, tempDir, tokens, bridgeDoc, until } from '../helpers/stack.js';
import { hashPassword } from '../../src/base/password.js';
import { TEST_COST } from '../login/helpers.js';
import { DataDirError, ensurePrivateDir } from '../../src/storage/private-dir.js';
import { openDatabase } from '../../src/storage/sqlite.js';

const mode = (p: string) => statSync(p).mode & 0o777;

/** Every file under `dir` (recursively) with its mode. */
function walk(dir: string, out: { path: string; mode: number; dir: boolean }[] = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    out.push({ path: p, mode: mode(p), dir: e.isDirectory() });
    if (e.isDirectory()) walk(p, out);
  }
  return out;
}

const skipOnWindows = process.platform === 'win32' ? 'POSIX modes' : false;

describe('files at rest are private whatever the umask', { skip: skipOnWindows }, () => {
  let old: number;
  before(() => {
    old = process.umask(0o022);
  });
  after(() => {
    process.umask(old);
  });

  test('a SQLite database and its -wal and -shm are 0600; looser ones of an older install are fixed on open', () => {
    const dir = tempDir();
    const file = join(dir, 'x.sqlite');
    const db = openDatabase(file);
    db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
    for (const f of [file, `${file}-wal`, `${file}-shm`]) assert.equal(mode(f), 0o600, f);
    db.close();
    const loose = join(dir, 'old.sqlite');
    writeFileSync(loose, '', { mode: 0o644 });
    writeFileSync(`${loose}-wal`, '', { mode: 0o644 });
    chmodSync(loose, 0o644);
    chmodSync(`${loose}-wal`, 0o644);
    openDatabase(loose).close();
    assert.equal(mode(loose), 0o600);
  });

  test('bridge (with users and a blob) and agent data: every file 0600, every folder 0700', async () => {
    const s = await inProcessStack({ bridge: {} });
    try {
      // A blob upload so the blob store writes files.
      const put = await fetch(`${s.url}/v1/blobs`, { method: 'POST', headers: { authorization: `Bearer ${s.tokens.runtime}`, 'content-type': 'application/octet-stream' }, body: 'secret bytes' });
      assert.ok(put.status < 300, `blob upload ${put.status}`);
      await s.client.call('diagnostics.echo', { value: 'secret' }, { wait: true });
      const files = [...walk(join(s.dir, 'bridge')), ...walk(join(s.dir, 'agent'))];
      assert.ok(files.some((f) => f.path.endsWith('journal.sqlite')) && files.some((f) => f.path.endsWith('bridge.sqlite')));
      assert.ok(files.some((f) => f.path.includes(`${join('bridge', 'blobs')}`) && !f.dir), 'a blob file exists');
      const loose = files.filter((f) => (f.dir ? f.mode !== 0o700 : f.mode & 0o077) && !f.path.endsWith('.sock'));
      assert.deepEqual(loose.map((f) => `${f.path} ${f.mode.toString(8)}`), []);
    } finally {
      await s.stop();
    }
  });

  test('oauth.sqlite of a bridge with users is 0600 (CLI bridge)', async () => {
    const dir = tempDir();
    const t = tokens();
    const cfg = join(dir, 'b.json');
    writeFileSync(cfg, JSON.stringify(bridgeDoc(dir, t, { users: [{ id: 'u', password_hash: await hashPassword('pw', TEST_COST), workspaces: ['ws'] }] })));
    const p = cli(['bridge', '--config', cfg], {});
    try {
      await until(() => existsSync(join(dir, 'bridge', 'bridge.json')), 20_000, 'bridge up');
      for (const f of ['oauth.sqlite', 'bridge.sqlite']) assert.equal(mode(join(dir, 'bridge', f)), 0o600, f);
      assert.equal(mode(join(dir, 'bridge')), 0o700);
    } finally {
      await p.kill('SIGKILL');
    }
  });

  test('a data folder made 0755 first, not by this program: the bridge and the agent refuse to start, saying what to do', async () => {
    const dir = tempDir();
    const data = join(dir, 'bridge');
    mkdirSync(data, { mode: 0o755 });
    chmodSync(data, 0o755);
    const cfg = join(dir, 'b.json');
    writeFileSync(cfg, JSON.stringify(bridgeDoc(dir, tokens())));
    const r = await cliRun(['bridge', '--config', cfg]);
    assert.notEqual(r.code, 0);
    assert.match(r.err + r.out, /can be read by other users \(mode 0755\).*chmod 700/s);
    assert.equal(mode(data), 0o755, 'a folder someone else chose is not changed');
    assert.deepEqual(readdirSync(data), [], 'nothing was written into it');
    assert.throws(() => ensurePrivateDir(data), DataDirError);
  });

  test('a data folder this program created and someone opened up (0755) is tightened back to 0700', () => {
    const dir = join(tempDir(), 'data');
    ensurePrivateDir(dir);
    chmodSync(dir, 0o755);
    assert.equal(ensurePrivateDir(dir), true);
    assert.equal(mode(dir), 0o700);
  });
});
