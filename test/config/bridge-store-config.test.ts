/**
 * The bridge config's `store` and `cluster` sections (issue 34): SQLite by default, PostgreSQL with a URL from
 * the file, a file it names, or AIOS_BRIDGE_STORE_URL, and a node id; and a bridge refusing to start a
 * clustered mode that is not wired yet instead of quietly running on SQLite.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../../src/config/load.js';
import { normalizeBridgeConfig, storeUrl, STORE_URL_ENV } from '../../src/config/bridge-config.js';
import { silentLogger } from '../../src/base/logger.js';
import { BridgeServer, ClusterNotWiredError } from '../../src/bridge/server.js';
import { startBridge } from '../../src/app/start-bridge.js';
import { tempDir } from '../helpers/stack.js';

const URL_ = 'postgres://aios:secret@db.example:5432/aios';

/** The ConfigError's problems for `doc` (fails when it is accepted). */
function problems(doc: Record<string, unknown>, source?: string): string[] {
  try {
    normalizeBridgeConfig({ data_dir: '/tmp/x', ...doc }, source);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `a ConfigError, not ${String(e)}`);
    return e.problems;
  }
  assert.fail('the config was accepted');
}

test('no store section is SQLite, and so is kind: sqlite', () => {
  assert.deepEqual(normalizeBridgeConfig({ data_dir: '/tmp/x' }).store, { kind: 'sqlite' });
  assert.deepEqual(normalizeBridgeConfig({ data_dir: '/tmp/x', store: { kind: 'sqlite' } }).store, { kind: 'sqlite' });
});

test('postgres with a url and a node id is accepted; the node id must be a lower-case identifier of 1 to 32', () => {
  const c = normalizeBridgeConfig({ data_dir: '/tmp/x', store: { kind: 'postgres', url: URL_ }, cluster: { node_id: 'node_a1' } });
  assert.deepEqual(c.store, { kind: 'postgres', url: URL_ });
  assert.equal(c.cluster?.node_id, 'node_a1');
  for (const bad of ['Node_A', 'node-a', '', 'x'.repeat(33), 'nöde']) {
    const p = problems({ store: { kind: 'postgres', url: URL_ }, cluster: { node_id: bad } });
    assert.ok(p.some((x) => x.includes('cluster.node_id')), `${JSON.stringify(bad)}: ${p.join('; ')}`);
  }
});

test('postgres without a node id, with url and url_file, or with a url that is not postgres:// says what to write', () => {
  assert.match(problems({ store: { kind: 'postgres', url: URL_ } }).join(), /needs "cluster\.node_id"/);
  assert.match(problems({ store: { kind: 'postgres', url: URL_, url_file: '/x' }, cluster: { node_id: 'a' } }).join(), /both set: give one/);
  const p = problems({ store: { kind: 'postgres', url: 'mysql://u:hunter2@h/db' }, cluster: { node_id: 'a' } }).join();
  assert.match(p, /"store\.url" is not a postgres:\/\/ or postgresql:\/\/ URL/);
  assert.doesNotMatch(p, /hunter2/, 'the URL (and its password) is never said back');
  assert.match(problems({ store: { kind: 'mysql' } }).join(), /store\.kind/);
  assert.match(problems({ store: { kind: 'postgres', url: URL_, password: 'x' }, cluster: { node_id: 'a' } }).join(), /store\.password/);
});

test('sqlite refuses postgres-only keys and a cluster section', () => {
  assert.match(problems({ store: { kind: 'sqlite', url: URL_ } }).join(), /"store\.url" and "store\.url_file" are for "store\.kind: postgres"/);
  assert.match(problems({ cluster: { node_id: 'a' } }).join(), /"cluster" needs "store\.kind: postgres"/);
});

test('url_file is read relative to the config file; an unreadable or wrong file is refused at load', () => {
  const dir = tempDir();
  try {
    const cfg = join(dir, 'bridge.yaml');
    writeFileSync(join(dir, 'db.url'), `${URL_}\n`);
    const c = normalizeBridgeConfig({ data_dir: 'data', store: { kind: 'postgres', url_file: 'db.url' }, cluster: { node_id: 'a' } }, cfg);
    assert.deepEqual(c.store, { kind: 'postgres', url_file: join(dir, 'db.url') });
    assert.equal(c.store.kind === 'postgres' && storeUrl(c.store), URL_, 'the file\'s URL, without its newline');
    assert.match(problems({ store: { kind: 'postgres', url_file: 'missing.url' }, cluster: { node_id: 'a' } }, cfg).join(), /"store\.url_file" \(.*missing\.url\) cannot be read \(ENOENT\)/);
    writeFileSync(join(dir, 'bad.url'), 'not a url');
    assert.match(problems({ store: { kind: 'postgres', url_file: 'bad.url' }, cluster: { node_id: 'a' } }, cfg).join(), /is not a postgres:\/\/ or postgresql:\/\/ URL/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test(`with neither url nor url_file the URL comes from ${STORE_URL_ENV}; without it the config is refused`, () => {
  const saved = process.env[STORE_URL_ENV];
  try {
    delete process.env[STORE_URL_ENV];
    assert.match(problems({ store: { kind: 'postgres' }, cluster: { node_id: 'a' } }).join(), new RegExp(`needs the database's URL: "store\\.url", "store\\.url_file" .* ${STORE_URL_ENV}`));
    process.env[STORE_URL_ENV] = URL_;
    const c = normalizeBridgeConfig({ data_dir: '/tmp/x', store: { kind: 'postgres' }, cluster: { node_id: 'a' } });
    assert.equal(c.store.kind === 'postgres' && storeUrl(c.store), URL_);
    // Read when the bridge starts, so a variable gone by then is said then too.
    assert.throws(() => c.store.kind === 'postgres' && storeUrl(c.store, {}), /needs the database's URL/);
  } finally {
    if (saved === undefined) delete process.env[STORE_URL_ENV];
    else process.env[STORE_URL_ENV] = saved;
  }
});

test('the single-process bridge configured for postgres refuses to start, saying it runs on SQLite only and pointing to cluster nodes, and opens nothing', async () => {
  const dir = tempDir();
  try {
    const config = normalizeBridgeConfig({ data_dir: join(dir, 'bridge'), users: [], store: { kind: 'postgres', url: URL_ }, cluster: { node_id: 'node_a' } });
    assert.throws(() => new BridgeServer(config, { log: silentLogger() }), (e: unknown) => e instanceof ClusterNotWiredError && e.code === 'cluster_not_wired' && /single-process bridge .* runs on SQLite only/.test(e.message) && /aios-device bridge/.test(e.message));
    await assert.rejects(startBridge(config, silentLogger()), ClusterNotWiredError);
    assert.equal(existsSync(join(dir, 'bridge')), false, 'no data_dir, no SQLite file: it did not quietly run on SQLite');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the store and cluster problems are said in the reader\'s language (en and zh-CN), and a missing URL names the variable', () => {
  const cases: Record<string, unknown>[] = [
    { store: { kind: 'sqlite', url: URL_ } },
    { cluster: { node_id: 'a' } },
    { store: { kind: 'postgres', url: URL_ } },
    { store: { kind: 'postgres', url: URL_, url_file: '/x' }, cluster: { node_id: 'a' } },
    { store: { kind: 'postgres', url: 'mysql://h/db' }, cluster: { node_id: 'a' } },
  ];
  for (const doc of cases) {
    try {
      normalizeBridgeConfig({ data_dir: '/tmp/x', ...doc });
      assert.fail(`accepted: ${JSON.stringify(doc)}`);
    } catch (e) {
      assert.ok(e instanceof ConfigError);
      const zh = e.say('zh-CN').join('；');
      assert.match(zh, /[\u4e00-\u9fff]{2}/, `${JSON.stringify(doc)} in zh-CN: ${zh}`);
      assert.doesNotMatch(zh, /\b(needs|are both set|is not a|are for)\b/, `no English sentence left: ${zh}`);
    }
  }
  const saved = process.env[STORE_URL_ENV];
  delete process.env[STORE_URL_ENV];
  try {
    assert.throws(() => storeUrl({ kind: 'postgres' }), (e: unknown) => (e as { said?: { key?: string } }).said?.key === 'core.config.store_url_missing' && (e as Error).message.includes(STORE_URL_ENV));
  } finally {
    if (saved !== undefined) process.env[STORE_URL_ENV] = saved;
  }
});
