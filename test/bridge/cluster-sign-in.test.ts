/**
 * Device sign-in across a clustered bridge (issue 34): three real nodes in this process on one private PostgreSQL 15
 * (the login state in PostgreSQL: migration 0009, src/bridge/store/pg-login-store.ts). A sign-in started on node A
 * is approved on node B's page and its tokens are polled on node C; the device connects with its OAuth access
 * token to node A and answers a call submitted on node C; a refresh on node B rotates, and replaying the spent
 * refresh token on node C ends the login; the device-authorization limit per address is one for the cluster; a
 * revocation handled by node B closes the device's session on node A.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { DEVICE_CODE_GRANT } from '../../src/protocol/oauth.js';
import { SimDevice, SIM_ECHO } from '../../bench/sim-device.js';
import { buildDeviceCard } from '../../src/discovery/card.js';
import { signCard } from '../../src/protocol/card-sign.js';
import type { JWK } from 'jose';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { tokens } from '../helpers/stack.js';
import { until } from '../helpers/wait.js';
import { startCluster } from '../helpers/cluster.js';
import { PageClient, testUsers } from '../login/helpers.js';

let server: PrivatePostgres;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

async function postJson(url: string, body: Record<string, unknown>, token?: string) {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

function authorization(deviceId: string, publicKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey) {
  return { client_id: 'aios-device', device_id: deviceId, device_name: 'QA box', platform: 'linux x64', client_version: '0.1.0', public_jwk: publicKey.export({ format: 'jwk' }) };
}

test('a sign-in started on node A is approved on node B and polled on node C; its token connects on any node; refresh rotates across nodes; the authorization limit is the cluster\'s', async () => {
  const t = tokens();
  const users = await testUsers();
  // Devices sign in (no configured device tokens); the runtime calls in the users' workspace.
  const c = await startCluster(server, 'signin', t, ['node_a', 'node_b', 'node_c'], {}, {}, {
    runtime_tokens: { [t.runtime]: { workspace_id: 'ws_a', name: 'Agent' } },
    users,
    device_poll_interval_s: 0,
  });
  const { nodes, urls } = c;
  const sims: SimDevice[] = [];
  try {
    const [urlA, urlB, urlC] = urls as [string, string, string];

    // The device's own key pair: its public half is pinned at sign-in, and its Adapter Card is signed with the private half.
    const deviceKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const grant = await postJson(`${urlA}/v1/oauth/device_authorization`, authorization('dev_signin', deviceKey.publicKey));
    assert.equal(grant.status, 200, JSON.stringify(grant.body));
    const userCode = grant.body['user_code'] as string;
    assert.equal(grant.body['verification_uri'], `${urlA}/device`);

    const pending = await postJson(`${urlC}/v1/oauth/token`, { grant_type: DEVICE_CODE_GRANT, device_code: grant.body['device_code'], client_id: 'aios-device' });
    assert.equal(pending.body['error'], 'authorization_pending', 'node C knows the code node A issued');

    const page = await new PageClient(urlB).decide(userCode, 'alice', 'approve', 'ws_a');
    assert.equal(page.status, 200, page.body);

    const issued = await postJson(`${urlC}/v1/oauth/token`, { grant_type: DEVICE_CODE_GRANT, device_code: grant.body['device_code'], client_id: 'aios-device' });
    assert.equal(issued.status, 200, JSON.stringify(issued.body));
    assert.deepEqual([issued.body['workspace_id'], issued.body['user_id'], issued.body['device_id']], ['ws_a', 'usr_alice', 'dev_signin']);

    // The OAuth-issued token connects to node A (checked in PostgreSQL), and a call through node C reaches it.
    const identity = { workspace_id: 'ws_a', user_id: 'usr_alice', device_id: 'dev_signin' };
    const card = await signCard(buildDeviceCard({ deviceId: 'dev_signin', deviceName: 'QA box', version: '9.0.0', http: 'http://127.0.0.1:9527' }, [SIM_ECHO]), { kid: 'dev-key', alg: 'ES256', privateKey: deviceKey.privateKey, publicJwk: deviceKey.publicKey.export({ format: 'jwk' }) as JWK });
    const sim = new SimDevice({ url: urlA.replace(/^http/, 'ws') + '/v1/device', token: issued.body['access_token'] as string, identity, protocolVersion: '1.2', adapterCard: card });
    sims.push(sim);
    const closes: number[] = [];
    sim.onclose = (code) => closes.push(code);
    await sim.connect();
    const call = await until(async () => {
      const r = await postJson(`${urlC}/v1/calls`, { workspace_id: 'ws_a', device_id: 'dev_signin', function: 'diagnostics.echo', arguments: { value: 'hi' }, wait: true }, t.runtime);
      return r.status === 200 ? r : undefined;
    }, 10_000, 'a call through node C answered by the signed-in device on node A');
    assert.equal(call.body['state'], 'completed');
    // Every node checks the card from that hello against the key pinned at sign-in (in PostgreSQL).
    for (const url of [urlA, urlB]) {
      const r = await fetch(`${url}/v1/devices/dev_signin`, { headers: { authorization: `Bearer ${t.runtime}` } });
      const view = (await r.json()) as Record<string, unknown>;
      assert.equal(view['adapter_card_verified'], true, `${url}: ${JSON.stringify(view['adapter_card_problem'] ?? null)}`);
    }

    // Refresh on node B rotates; the spent refresh token replayed on node C ends the login everywhere.
    const rotated = await postJson(`${urlB}/v1/oauth/token`, { grant_type: 'refresh_token', refresh_token: issued.body['refresh_token'], client_id: 'aios-device' });
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    const replay = await postJson(`${urlC}/v1/oauth/token`, { grant_type: 'refresh_token', refresh_token: issued.body['refresh_token'], client_id: 'aios-device' });
    assert.equal(replay.body['error'], 'invalid_grant');
    const again = await postJson(`${urlA}/v1/oauth/token`, { grant_type: 'refresh_token', refresh_token: rotated.body['refresh_token'], client_id: 'aios-device' });
    assert.equal(again.body['error'], 'invalid_grant', 'the rotated chain was revoked by the replay on another node');
    const late = new SimDevice({ url: urlB.replace(/^http/, 'ws') + '/v1/device', token: rotated.body['access_token'] as string, identity, protocolVersion: '1.2' });
    sims.push(late);
    await assert.rejects(late.connect(), 'a revoked access token is refused on node B too');

    // 20 device authorizations per address per 10 minutes, for the whole cluster (1 used above).
    const statuses: number[] = [];
    for (let i = 0; i < 21; i++) statuses.push((await postJson(`${urls[i % 3]}/v1/oauth/device_authorization`, authorization(`dev_flood_${i}`))).status);
    assert.deepEqual(statuses, [...Array(19).fill(200), 429, 429], 'the 21st request from one address is refused, whichever node it reaches');

    // The owner revokes the device on node B's side: its session on node A is closed (4003), not left running.
    assert.equal(closes.length, 0, 'the signed-in device is still connected to node A');
    assert.equal(await nodes[1]!.oauth!.revokeDevice('dev_signin'), true);
    await until(() => closes.includes(4003), 10_000, 'node A closed the revoked device\'s session with 4003');
  } finally {
    for (const s of sims) s.close(true);
    await c.stop();
  }
});
