/**
 * Device ids across workspaces (issue 13, High 1). The attack, end to end through a CLI-started bridge
 * that has both `device_tokens` and `users`: a user of workspace B tries to take over a device of
 * workspace A by its id — by login (provisioned id, another user's id, another key's id, with the
 * victim's public key, and racing the victim's approval), by revoking it, and, where an administrator
 * did give two workspaces the same device id, by answering, reporting and cancelling the other's calls.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ids, inProcessStack, processStack, tokens, until } from '../helpers/stack.js';
import { hashPassword } from '../../src/base/password.js';
import { PageClient, TEST_COST } from '../login/helpers.js';
import { RuntimeClient } from '../../src/runtime-client/client.js';
import { askForCode, forged, pollToken, publicJwk, RogueDevice } from './helpers.js';
import { CLOSE } from '../../src/protocol/ws-transport.js';
import type { Logger } from '../../src/sdk/index.js';

async function users() {
  return [
    { id: 'usr_bob', name: 'bob', password_hash: await hashPassword('bob-pw', TEST_COST), workspaces: ['ws_b'] },
    { id: 'usr_alice', name: 'alice', password_hash: await hashPassword('alice-pw', TEST_COST), workspaces: ['ws_a', 'ws_b'] },
  ];
}

describe('a user of another workspace cannot take over a device (CLI bridge with device_tokens and users)', () => {
  let s: Awaited<ReturnType<typeof processStack>>;
  before(async () => {
    s = await processStack({ bridge: { users: await users(), device_poll_interval_s: 0 } });
  });
  after(async () => {
    await s?.stop();
  });

  test('the provisioned device id is refused at device_authorization; the victim keeps its session and its call', async () => {
    const victimCall = await s.client.call('diagnostics.wait', { ms: 1500 }, { timeout_ms: 30_000, wait: false });
    assert.equal(victimCall.status, 202);
    const callId = victimCall.record.call_id;

    const asked = await askForCode(s.url, ids.device_id);
    // Where a code is issued (the hole), the attack goes on: approve into ws_b, take tokens, connect as dev_t.
    if (asked.status === 200) {
      const page = new PageClient(s.url);
      await page.decide(asked.body['user_code']!, 'bob', 'approve', 'ws_b');
      const t = await pollToken(s.url, asked.body['device_code']!);
      if (t.status === 200) await RogueDevice.connect(s.url, t.body['access_token']!, { workspace_id: 'ws_b', user_id: 'usr_bob', device_id: ids.device_id }).catch(() => undefined);
    }
    assert.equal(asked.status, 400, `a code for a provisioned device id must be refused, got ${asked.status} ${JSON.stringify(asked.body)}`);
    assert.equal(asked.body['error'], 'invalid_request');
    assert.match(asked.body['error_description'] ?? '', /provisioned/);

    const done = await s.client.waitTerminal(callId, 20_000);
    assert.equal(done.outcome?.state, 'completed');
    assert.deepEqual(Object.keys(done.outcome?.output as object), ['waited_ms'], 'the outcome is the real device\'s, not a forged one');
    assert.equal((await s.client.device(ids.device_id))['online'], true, 'the victim\'s session was not replaced');
  });

  test('another user cannot claim a device registered by login, even with its public key, nor win a race to it', async () => {
    // Alice registers dev_alice into ws_a with her key.
    const aliceKey = publicJwk();
    const a = await askForCode(s.url, 'dev_alice', aliceKey);
    assert.equal(a.status, 200);
    const approved = await new PageClient(s.url).decide(a.body['user_code']!, 'alice', 'approve', 'ws_a');
    assert.equal(approved.status, 200);
    assert.equal((await pollToken(s.url, a.body['device_code']!)).status, 200);

    // Bob with his own key: refused before any code exists.
    const other = await askForCode(s.url, 'dev_alice');
    assert.equal(other.status, 400);
    assert.match(other.body['error_description'] ?? '', /registered to another device/);

    // Bob presenting Alice's public key (it is public): a code, but the approval by another user is refused.
    const copied = await askForCode(s.url, 'dev_alice', aliceKey);
    assert.equal(copied.status, 200);
    const refused = await new PageClient(s.url).decide(copied.body['user_code']!, 'bob', 'approve', 'ws_b');
    assert.equal(refused.status, 409);
    assert.match(refused.body, /registered to another user/);
    assert.equal((await pollToken(s.url, copied.body['device_code']!)).body['error'], 'authorization_pending');

    // A race: Bob asks for a free id first, Alice registers it, then Bob approves his code: refused (another key).
    const early = await askForCode(s.url, 'dev_race');
    const aliceRace = publicJwk();
    const ar = await askForCode(s.url, 'dev_race', aliceRace);
    assert.equal((await new PageClient(s.url).decide(ar.body['user_code']!, 'alice', 'approve', 'ws_a')).status, 200);
    const late = await new PageClient(s.url).decide(early.body['user_code']!, 'bob', 'approve', 'ws_b');
    assert.equal(late.status, 409);
    assert.match(late.body, /registered to another user|different key/);

    // The same user with the same key may move her device to another workspace.
    const move = await askForCode(s.url, 'dev_alice', aliceKey);
    assert.equal(move.status, 200);
    assert.equal((await new PageClient(s.url).decide(move.body['user_code']!, 'alice', 'approve', 'ws_b')).status, 200);
  });

  test('revoking through the page or the revoke endpoint never touches a device of another identity', async () => {
    const page = new PageClient(s.url);
    const start = await page.get('/device');
    const signed = await page.post('/device/signin', { csrf: PageClient.csrf(start.body), username: 'bob', password: 'bob-pw', user_code: '' });
    const r = await page.post('/device/revoke', { csrf: PageClient.csrf(signed.body), device_id: ids.device_id });
    assert.equal(r.status, 404);
    const rv = await fetch(`${s.url}/v1/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: s.tokens.device }) });
    assert.equal(rv.status, 200);
    const c = await s.client.call('diagnostics.echo', { value: 1 }, { wait: true });
    assert.equal(c.record.outcome?.state, 'completed', 'the victim still serves calls');
  });
});

/** A logger that keeps warnings, so a test can see that a dropped answer was logged. */
function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const noop = () => undefined;
  const log = { warnings, trace: noop, debug: noop, info: noop, error: noop, fatal: noop, warn: (_o: unknown, msg?: string) => void warnings.push(msg ?? ''), child: () => log } as unknown as Logger & { warnings: string[] };
  return log;
}

describe('the same device id in two workspaces (administrator-provisioned): sessions, calls and answers never cross', () => {
  const tB = tokens();
  const idB = { workspace_id: 'ws_b', user_id: 'usr_b', device_id: ids.device_id };
  let s: Awaited<ReturnType<typeof inProcessStack>>;
  let rogue: RogueDevice;
  let clientB: RuntimeClient;
  const log = recordingLogger();
  before(async () => {
    s = await inProcessStack({
      bridge: {
        runtime_tokens: { [tB.runtime]: { workspace_id: 'ws_b' } },
        device_tokens: { [tB.device]: idB },
      },
      bridgeOptions: { log },
    });
    clientB = new RuntimeClient({ bridge_url: s.url, token: tB.runtime, workspace_id: 'ws_b', device_id: ids.device_id });
  });
  after(async () => {
    rogue?.close();
    await s?.stop();
  });

  test('a session in workspace B does not replace A\'s, and A\'s calls, cancels and deadline cancels go to A only', async () => {
    const connA = s.bridge.hub.get(ids.device_id, ids.workspace_id);
    assert.ok(connA, 'A is online');
    rogue = await RogueDevice.connect(s.url, tB.device, idB);
    assert.equal(s.bridge.hub.get(ids.device_id, ids.workspace_id), connA, 'A\'s session is still the same one');
    assert.equal(rogue.closedWith, undefined);

    const slow = await s.client.call('diagnostics.wait', { ms: 60_000 }, { timeout_ms: 60_000, wait: false });
    await until(async () => (await s.client.getCall(slow.record.call_id)).state === 'running', 10_000, 'A\'s call running');
    const cancelled = await s.client.cancel(slow.record.call_id);
    assert.equal(cancelled.outcome?.state, 'cancelled');
    assert.equal(rogue.invokes.length + rogue.cancels.length, 0, 'nothing of A\'s reached B');
  });

  test('reports and answers from another identity, or naming another call or function, are dropped and logged', async () => {
    // A call of A; B reports a forged outcome for it.
    const a = await s.client.call('diagnostics.wait', { ms: 1500 }, { timeout_ms: 30_000, wait: false });
    const ack = await rogue.report([forged(a.record.call_id, 'diagnostics.wait')]);
    assert.deepEqual(ack.accepted, [a.record.call_id], 'acknowledged like an unknown call, so the sender learns nothing');
    const aDone = await s.client.waitTerminal(a.record.call_id, 20_000);
    assert.deepEqual(Object.keys(aDone.outcome?.output as object), ['waited_ms'], 'A\'s outcome is A\'s own');
    assert.ok(log.warnings.some((w) => /dropped a device answer/.test(w)), 'the forged report was logged');

    // B's own call: B answers with another call's id, then with another function: both dropped; the bridge's deadline decides.
    const before = log.warnings.length;
    rogue.answer = (m, p) => (m === 'aios/function.invoke' ? forged(a.record.call_id, 'diagnostics.wait') : forged(p.call_id, 'diagnostics.echo'));
    const b = await clientB.call('diagnostics.wait', { ms: 10 }, { timeout_ms: 200, confirm_timeout_ms: 1, wait: false });
    const bDone = await clientB.waitTerminal(b.record.call_id, 30_000);
    assert.equal(rogue.cancels.length, 1, 'the deadline cancel went to B\'s own session');
    assert.equal(bDone.outcome?.state, 'unknown', 'the bridge says what it knows (1.2 §6.4)');
    assert.equal(bDone.outcome?.error?.type, 'timeout', 'neither mismatched answer was taken');
    assert.ok(log.warnings.length >= before + 2, 'both were logged');
    assert.equal((await s.client.getCall(a.record.call_id)).outcome?.output !== undefined, true);
  });

  test('disconnecting one identity leaves the other', async () => {
    s.bridge.hub.disconnect(idB);
    await until(() => rogue.closedWith !== undefined, 5000, 'B closed');
    assert.equal(rogue.closedWith, CLOSE.revoked);
    assert.ok(s.bridge.hub.isOnline(ids.device_id, ids.workspace_id), 'A stays online');
    s.bridge.hub.disconnect({ ...ids, user_id: 'usr_someone_else' });
    assert.ok(s.bridge.hub.isOnline(ids.device_id, ids.workspace_id), 'a disconnect naming another user does nothing');
  });
});

