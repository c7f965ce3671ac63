/**
 * One rule decides what is published (issue 13, Low 4, with issue 14 item 2): the Adapter Card without
 * credentials lists no `private` skill, with credentials (and in hello) it is complete; each variant
 * verifies with the device key; a function `functions.disabled` turns off appears nowhere — not in the
 * bridge's function list, not in either card, not in the skill index, not as a descriptor.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ids, inProcessStack } from '../helpers/stack.js';
import { verifyCard } from '../../src/discovery/card-sign.js';
import type { JWK } from 'jose';

type Card = { skills: { id: string; access?: string }[] } & Record<string, unknown>;

describe('what is published', () => {
  let s: Awaited<ReturnType<typeof inProcessStack>>;
  let base: string;
  let auth: Record<string, string>;
  before(async () => {
    s = await inProcessStack({ agent: { local_endpoint: { host: '127.0.0.1', port: 0, socket: false }, functions: { disabled: ['diagnostics.wait'] } } });
    const ep = s.running.endpoint!;
    base = ep.info()!.http;
    auth = { Authorization: `Bearer ${ep.localToken}` };
  });
  after(() => s?.stop());

  const get = async (path: string, headers: Record<string, string> = {}) => (await fetch(base + path, { headers })).json() as Promise<unknown>;

  test('the anonymous card omits private skills, the authenticated one is complete; both are signed and verify', async () => {
    const jwks = (await get('/.well-known/jwks.json')) as { keys: JWK[] };
    const anon = (await get('/.well-known/aios-adapter.json')) as Card;
    const full = (await get('/.well-known/aios-adapter.json', auth)) as Card;
    assert.ok(full.skills.some((k) => k.id === 'diagnostics.echo'), 'the private diagnostics are in the complete card');
    assert.deepEqual(anon.skills.filter((k) => k.id.startsWith('diagnostics.')), [], 'no private skill without credentials');
    assert.ok(anon.skills.length > 0 && anon.skills.length < full.skills.length);
    for (const c of [anon, full]) await verifyCard(c, (kid) => jwks.keys.find((k) => k.kid === kid));
    // The card in hello is the complete one.
    const hello = s.bridge.store.adapterCard(ids.workspace_id, ids.device_id) as unknown as Card;
    assert.deepEqual(hello.skills.map((k) => k.id).sort(), full.skills.map((k) => k.id).sort());
  });

  test('a disabled function is published nowhere', async () => {
    const id = 'diagnostics.wait';
    const device = await s.client.device(ids.device_id);
    assert.ok(!(device['functions'] as { id: string }[]).some((f) => f.id === id), 'bridge function list');
    for (const h of [{}, auth]) {
      assert.ok(!((await get('/.well-known/aios-adapter.json', h)) as Card).skills.some((k) => k.id === id), 'card');
      assert.ok(!((await get('/.well-known/skill-sharing', h)) as Card).skills.some((k) => k.id === id), 'skill index');
    }
    assert.equal((await fetch(`${base}/skills/${id}/descriptor.json`, { headers: auth })).status, 404);
    const r = await s.client.call(id, { ms: 1 }, { wait: true });
    assert.equal(r.record.outcome?.error?.type, 'unknown_function');
  });
});
