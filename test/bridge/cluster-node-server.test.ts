/**
 * The clustered mode's nodes (src/bridge/cluster/node-server.ts): nodes on one private PostgreSQL 15 join after
 * the config check, heartbeat, and answer GET /health with the cluster's nodes; the routes not wired to
 * PostgreSQL yet are refused with `cluster_not_wired`; a node with another runtime_tokens refuses to start; and
 * `aios-device bridge` runs such a node. The call path itself: cluster-calls.test.ts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { silentLogger } from '../../src/base/logger.js';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import { ClusterConfigMismatchError } from '../../src/bridge/cluster/node.js';
import { ClusterNodeServer } from '../../src/bridge/cluster/node-server.js';
import { PgBridgeStore } from '../../src/bridge/store/pg-store.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { cli, procReport, tempDir } from '../helpers/stack.js';
import { until } from '../helpers/wait.js';

let server: PrivatePostgres;
let n = 0;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

/** A node's config on the database at `url`. */
function nodeConfig(url: string, nodeId: string, over: Record<string, unknown> = {}) {
  return normalizeBridgeConfig({
    data_dir: '/nonexistent/unused',
    listen: { host: '127.0.0.1', port: 0 },
    runtime_tokens: { 'rt-secret': { workspace_id: 'ws_a', name: 'Agent' } },
    device_tokens: { 'dev-secret': { workspace_id: 'ws_a', user_id: 'u1', device_id: 'dev_1' } },
    store: { kind: 'postgres', url },
    cluster: { node_id: nodeId },
    ...over,
  });
}

const health = async (url: string) => {
  const r = await fetch(`${url}/health`);
  return { status: r.status, body: (await r.json()) as { status: string; node_id: string; bus?: string; cluster: { nodes: { node_id: string; last_seen: string }[] } } };
};

test('two nodes join one cluster and list each other in GET /health; the device list comes from PostgreSQL; the route not wired yet (blobs) answers 503 cluster_not_wired; a node with another runtime_tokens refuses to join', async () => {
  const db = server.createDatabase(`nodesrv${process.pid}_${++n}`);
  const a = new ClusterNodeServer(nodeConfig(db, 'node_a'), { log: silentLogger(), heartbeatMs: 50 });
  const b = new ClusterNodeServer(nodeConfig(db, 'node_b', { listen: { host: '127.0.0.1', port: 0 }, heartbeat_ms: 1000 }), { log: silentLogger() });
  const odd = new ClusterNodeServer(nodeConfig(db, 'node_c', { runtime_tokens: { 'rt-other': { workspace_id: 'ws_a', name: 'Agent' } } }), { log: silentLogger() });
  try {
    const urlA = await a.start();
    const urlB = await b.start();
    const h = await health(urlB);
    assert.equal(h.status, 200);
    assert.equal(h.body.status, 'ok');
    assert.equal(h.body.node_id, 'node_b');
    assert.equal(h.body.bus, 'listening');
    assert.deepEqual(h.body.cluster.nodes.map((x) => x.node_id), ['node_a', 'node_b']);
    // Node a's heartbeat moves its last_seen, as node b sees it.
    const seen = h.body.cluster.nodes[0]!.last_seen;
    await until(async () => (await health(urlB)).body.cluster.nodes[0]!.last_seen > seen, 5_000, 'node_a\'s heartbeat');

    const call = await fetch(`${urlA}/v1/calls`, { method: 'POST', headers: { authorization: 'Bearer rt-secret', 'content-type': 'application/json' }, body: '{}' });
    assert.equal(call.status, 400, 'the calls API is served: a bad body is the runtime\'s error');
    const list = await fetch(`${urlB}/v1/devices`, { headers: { authorization: 'Bearer rt-secret' } });
    assert.equal(list.status, 200);
    assert.deepEqual(((await list.json()) as { devices: { device_id: string; online: boolean }[] }).devices.map((d) => [d.device_id, d.online]), [['dev_1', false]]);
    // The QA console is served by every node (a static page over the runtime API), with its words.
    const page = await fetch(`${urlB}/console/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    const words = (await (await fetch(`${urlA}/console/i18n/zh-CN.json`)).json()) as Record<string, string>;
    assert.ok(Object.keys(words).length > 0 && Object.keys(words).every((k) => k.startsWith('bridge.console.')), 'the console\'s zh-CN words');
    for (const path of ['/v1/blobs']) {
      const r = await fetch(`${urlA}${path}`, { headers: { authorization: 'Bearer rt-secret' } });
      assert.equal(r.status, 503, path);
      const body = (await r.json()) as { error: { type: string; message: string } };
      assert.equal(body.error.type, 'cluster_not_wired', path);
      assert.match(body.error.message, /without blobs.dir the blob routes are refused/);
    }
    const opened = await new Promise<boolean>((resolve) => {
      const ws = new WebSocket(`${urlA.replace(/^http/, 'ws')}/v1/device`, 'aios-device.v1', { headers: { authorization: 'Bearer dev-secret' } });
      ws.on('open', () => {
        ws.close();
        resolve(true);
      });
      ws.on('unexpected-response', () => resolve(false));
      ws.on('error', () => resolve(false));
    });
    assert.equal(opened, true, 'device sockets are served');

    await assert.rejects(odd.start(), (e: unknown) => e instanceof ClusterConfigMismatchError && /"runtime_tokens"/.test(e.message) && e.differing.length === 2);
    assert.deepEqual((await health(urlA)).body.cluster.nodes.map((x) => x.node_id), ['node_a', 'node_b'], 'the refused node left no row');

    await b.stop();
    assert.deepEqual((await health(urlA)).body.cluster.nodes.map((x) => x.node_id), ['node_a'], 'a clean stop leaves the cluster');
  } finally {
    await Promise.all([a.stop(), b.stop(), odd.stop()]);
  }
});

test('aios-device bridge with store.kind: postgres runs a cluster node: it says what it serves and what is not wired yet, joins, and leaves on SIGTERM', async () => {
  const db = server.createDatabase(`nodecli${process.pid}_${++n}`);
  const dir = tempDir();
  const file = join(dir, 'bridge.json.cfg');
  writeFileSync(file, JSON.stringify({ data_dir: join(dir, 'data'), listen: { host: '127.0.0.1', port: 0 }, store: { kind: 'postgres', url: db }, cluster: { node_id: 'cli_node' } }));
  const p = cli(['bridge', '--config', file]);
  const store = await PgBridgeStore.open(db, { max: 1 });
  try {
    await until(() => /cluster node cli_node joined \(1 node\(s\) on record\)/.test(p.err), 30_000, () => `the node's start line\n${procReport('bridge', p)}`);
    assert.match(p.err, /serves device connections, the calls API, the device list, device sign-in, the MCP endpoints and the QA console on .*, and blobs when blobs.dir names a folder every node mounts; without blobs.dir the blob routes answer 503 cluster_not_wired/);
    assert.deepEqual((await store.clusterNodes()).map((x) => x.node_id), ['cli_node']);
    assert.equal(await p.kill('SIGTERM'), 0, procReport('bridge', p));
    assert.deepEqual(await store.clusterNodes(), [], 'it left the cluster when stopped');
  } finally {
    if (p.child.exitCode === null) await p.kill('SIGKILL');
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
