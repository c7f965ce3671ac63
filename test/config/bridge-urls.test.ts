/**
 * `bridge.urls` (issue 34): the agent config's list of bridge addresses, tried in order with the backoff
 * for operators without a load balancer. The config's checks and normalisation, then a real agent whose
 * first address refuses connections reaching a real bridge on its second, and a call through it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeAgentConfig, bridgeUrls } from '../../src/config/agent-config.js';
import { ConfigError } from '../../src/config/load.js';
import { freePort } from '../helpers/net.js';
import { inProcessStack, ids, until } from '../helpers/stack.js';

const keysOf = (e: unknown) => (e instanceof ConfigError ? e.reasons.map((p) => (typeof p === 'string' ? p : p.key)) : []);

test('bridge.url and bridge.urls are exclusive, and every address must be ws(s) or http(s)', () => {
  assert.throws(() => normalizeAgentConfig({ bridge: { url: 'ws://a/v1/device', urls: ['ws://b/v1/device'] } }), (e) => keysOf(e).includes('core.config.url_exclusive'));
  assert.throws(() => normalizeAgentConfig({ bridge: { urls: ['ws://a/v1/device', 'ftp://b/'] } }), (e) => keysOf(e).includes('core.config.bridge_url'));
  assert.throws(() => normalizeAgentConfig({ bridge: { url: 'not a url' } }), (e) => keysOf(e).includes('core.config.bridge_url'));
  assert.throws(() => normalizeAgentConfig({ bridge: { urls: [] } }), ConfigError, 'an empty list is refused by the schema');
});

test('bridge.urls: bridge.url becomes the first address; bridgeUrls gives the list (or the one url)', () => {
  const c = normalizeAgentConfig({ bridge: { urls: ['wss://a.example/v1/device', 'wss://b.example/v1/device'] } });
  assert.equal(c.bridge?.url, 'wss://a.example/v1/device');
  assert.deepEqual(bridgeUrls(c), ['wss://a.example/v1/device', 'wss://b.example/v1/device']);
  assert.deepEqual(bridgeUrls(normalizeAgentConfig({ bridge: { url: 'ws://one/v1/device' } })), ['ws://one/v1/device']);
  assert.deepEqual(bridgeUrls(normalizeAgentConfig({})), []);
});

test('a real agent whose first bridge address refuses connections comes online on the second and serves a call', async (t) => {
  const stack = await inProcessStack();
  t.after(() => stack.stop());
  await stack.running.stop();
  await until(() => !stack.bridge.hub.isOnline(ids.device_id), 10_000, 'the first agent offline');
  const closed = `ws://127.0.0.1:${await freePort()}/v1/device`;
  const live = stack.url.replace(/^http/, 'ws') + '/v1/device';
  const running = await stack.makeAgent({ bridge: { urls: [closed, live], token: stack.tokens.device } });
  t.after(() => running.stop());
  await until(() => stack.bridge.hub.isOnline(ids.device_id), 20_000, 'agent online through its second address');
  assert.equal(running.agent.session?.url, live);
  const { record } = await stack.client.call('diagnostics.echo', { value: 'through the second address' });
  assert.equal(record.state, 'completed', JSON.stringify(record));
  assert.deepEqual(record.outcome?.output, { value: 'through the second address' });
});
