/**
 * Protocol 1.2 on the reference bridge (PROTOCOL.md §6.1, §10, "Changes"): a device refused at hello is
 * answered with the refusal's type (not device_offline) and details.last_refused_hello, kept in the
 * bridge's store across a restart; runtime_tokens entries resolve to an attested runtime { id, name }.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { normalizeBridgeConfig, resolveRuntimeTokens } from '../../src/config/bridge-config.js';
import { silentLogger } from '../../src/base/logger.js';
import { BridgeServer } from '../../src/bridge/server.js';
import { bridgeDoc, ids, tempDir, tokens, until } from '../helpers/stack.js';
import { echoOutcome, SimDevice } from '../../bench/sim-device.js';

test('runtime_tokens: id defaults to the slug of name; with neither, runtime-<n> by position, marked unnamed', () => {
  const r = resolveRuntimeTokens({ a: { workspace_id: 'w', name: 'Front-desk Runtime!' }, b: { workspace_id: 'w' }, c: { workspace_id: 'w', id: 'rt_x', name: 'X' } });
  assert.deepEqual(r['a'], { workspace_id: 'w', id: 'front-desk-runtime', name: 'Front-desk Runtime!' });
  assert.deepEqual(r['b'], { workspace_id: 'w', id: 'runtime-2', name: 'runtime-2', unnamed: true });
  assert.deepEqual(r['c'], { workspace_id: 'w', id: 'rt_x', name: 'X' });
  for (const e of Object.values(r)) assert.ok(!JSON.stringify(e).includes('"a"'), 'never the token');
});

test('POST /v1/calls to a device refused at hello: 409 client_outdated with last_refused_hello, also after a bridge restart', async () => {
  const dir = tempDir();
  const t = tokens();
  const cfg = normalizeBridgeConfig(bridgeDoc(dir, t, { min_client_version: '99.0.0' }));
  let bridge = new BridgeServer(cfg, { log: silentLogger() });
  let url = await bridge.start();
  try {
    const sim = new SimDevice({ url: url.replace(/^http/, 'ws') + '/v1/device', token: t.device, identity: ids, protocolVersion: '1.2' });
    const err = await sim.connect().then(() => null, (e: Error & { rpc?: { data?: { type?: string } } }) => e);
    assert.equal(err?.rpc?.data?.type, 'client_outdated');
    assert.match(err!.message, /This client is 9\.0\.0; the bridge needs 99\.0\.0 or newer/);
    sim.close();
    const post = async () => {
      const r = await fetch(`${url}/v1/calls`, { method: 'POST', headers: { authorization: `Bearer ${t.runtime}`, 'content-type': 'application/json' }, body: JSON.stringify({ workspace_id: ids.workspace_id, device_id: ids.device_id, function: 'device.info', arguments: {} }) });
      return { status: r.status, body: (await r.json()) as { error: { type: string; details?: { last_refused_hello?: Record<string, unknown> } } } };
    };
    for (let round = 0; round < 2; round++) {
      const r = await post();
      assert.equal(r.status, 409);
      assert.equal(r.body.error.type, 'client_outdated', JSON.stringify(r.body));
      const last = r.body.error.details?.last_refused_hello;
      assert.equal(last?.['client_version'], '9.0.0');
      assert.equal(last?.['minimum'], '99.0.0');
      assert.equal(last?.['protocol_version'], '1.2');
      assert.equal(typeof last?.['at'], 'string');
      // The refusal is in the store: a restarted bridge still knows it.
      await bridge.stop();
      bridge = new BridgeServer(cfg, { log: silentLogger() });
      url = await bridge.start();
    }
  } finally {
    await bridge.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('runtime { id, name } from the token entry travels in invokes on 1.2 sessions only; never the token', async () => {
  for (const version of ['1.2', '1.1']) {
    const dir = tempDir();
    const t = tokens();
    const bridge = new BridgeServer(normalizeBridgeConfig(bridgeDoc(dir, t, { runtime_tokens: { [t.runtime]: { workspace_id: ids.workspace_id, name: 'Front desk' } } })), { log: silentLogger() });
    const url = await bridge.start();
    const seen: Record<string, unknown>[] = [];
    const sim = new SimDevice({
      url: url.replace(/^http/, 'ws') + '/v1/device', token: t.device, identity: ids, protocolVersion: version,
      answer: async (p) => {
        seen.push(p as unknown as Record<string, unknown>);
        const now = new Date();
        return echoOutcome(p, now, now, now);
      },
    });
    try {
      await sim.connect();
      await until(() => bridge.store.getDevice(ids.workspace_id, ids.device_id)?.functions.length, 10_000, 'functions read');
      const r = await fetch(`${url}/v1/calls`, { method: 'POST', headers: { authorization: `Bearer ${t.runtime}`, 'content-type': 'application/json' }, body: JSON.stringify({ workspace_id: ids.workspace_id, device_id: ids.device_id, function: 'diagnostics.echo', arguments: { value: 1 }, wait: true }) });
      assert.equal(r.status, 200);
      assert.equal(seen.length, 1);
      if (version === '1.2') assert.deepEqual(seen[0]!['runtime'], { id: 'front-desk', name: 'Front desk' });
      else assert.equal(seen[0]!['runtime'], undefined, 'a 1.1 session gets no runtime');
      assert.ok(!JSON.stringify(seen[0]).includes(t.runtime), 'the token never travels');
    } finally {
      sim.close();
      await bridge.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

test('bridge store migration 6 on a database holding a call row: the old call counts as sent, nothing resolved, refusals table empty', async () => {
  const { default: Database } = await import('better-sqlite3');
  const { migrate } = await import('../../src/storage/migrations.js');
  const { BRIDGE_SCHEMA } = await import('../../src/bridge/store.js');
  const dir = tempDir();
  try {
    const db = new Database(join(dir, 'b.sqlite'));
    migrate(db, BRIDGE_SCHEMA, { upTo: 5 });
    db.prepare(`INSERT INTO bridge_calls (workspace_id, call_id, device_id, function, args_digest, params, state, outcome, bridge_outcome, timeline, deadline_ms, created_at, updated_at)
      VALUES ('ws', 'c1', 'd1', 'diagnostics.echo', 'x', '{}', 'running', NULL, 0, '[]', 1, 't', 't')`).run();
    migrate(db, BRIDGE_SCHEMA);
    const r = db.prepare(`SELECT call_id, state, sent, resolved_from, device_outcome FROM bridge_calls`).get() as Record<string, unknown>;
    assert.deepEqual(r, { call_id: 'c1', state: 'running', sent: 1, resolved_from: null, device_outcome: null });
    assert.equal((db.prepare(`SELECT count(*) AS n FROM bridge_refused_hellos`).get() as { n: number }).n, 0);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
