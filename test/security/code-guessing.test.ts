/**
 * Guessing user codes (issue 13, Medium 2 and Low 5): every way a code is entered — the lookup
 * (`GET /device?user_code=`) and the decision (`POST /device/decision`) — spends one budget per client
 * address and page session, and one budget for the whole bridge per minute; the endpoints that create
 * rows (`device_authorization`, the page's session per visit) are limited per address and capped.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PageClient, startOAuthBridge, type OAuthBridge } from '../login/helpers.js';
import { askForCode } from './helpers.js';

/** Signs bob in and returns a client and the CSRF token of the code-entry page. */
async function signedIn(url: string): Promise<{ page: PageClient; csrf: string }> {
  const page = new PageClient(url);
  const start = await page.get('/device');
  const signed = await page.post('/device/signin', { csrf: PageClient.csrf(start.body), username: 'bob', password: 'bob-pw', user_code: '' });
  return { page, csrf: PageClient.csrf(signed.body) };
}

function wrongCode(i: number): string {
  const a = 'BCDFGHJKLMNPQRSTVWXZ';
  return `BBBB-${a[i % 20]}${a[Math.floor(i / 20) % 20]}BB`;
}

describe('the approval POST spends the code budget of its address and session', () => {
  let b: OAuthBridge;
  before(async () => {
    b = await startOAuthBridge({ code_attempts: { max: 5, window_s: 600 } });
  });
  after(() => b.close());

  test('after 5 wrong codes posted to /device/decision, even the right code is refused (429) and nothing is approved', async () => {
    const victim = await askForCode(b.url, 'dev_victim');
    assert.equal(victim.status, 200);
    const { page, csrf } = await signedIn(b.url);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      statuses.push((await page.post('/device/decision', { csrf, user_code: wrongCode(i), action: 'approve', workspace_id: 'ws_b' })).status);
    }
    assert.deepEqual(statuses.slice(0, 5), [409, 409, 409, 409, 409]);
    assert.deepEqual(statuses.slice(5), [429, 429, 429], 'the decision path is limited');
    const right = await page.post('/device/decision', { csrf, user_code: victim.body['user_code']!, action: 'approve', workspace_id: 'ws_b' });
    assert.equal(right.status, 429);
    assert.equal(await b.service.device('dev_victim'), undefined, 'the victim\'s device was not approved into the attacker\'s workspace');
    // The lookup shares the budget: it is spent there too.
    assert.equal((await page.get(`/device?user_code=${victim.body['user_code']!}`)).status, 429);
  });
});

describe('a bridge-wide budget of wrong codes per minute, whatever the address or session', () => {
  let b: OAuthBridge;
  before(async () => {
    b = await startOAuthBridge({ code_attempts: { max: 1000, window_s: 600 }, wrong_codes_per_minute: 6 });
  });
  after(() => b.close());

  test('fresh sessions do not reset it; lookups and decisions both spend it; it refills after a minute', async () => {
    const victim = await askForCode(b.url, 'dev_victim2');
    const results: number[] = [];
    for (let i = 0; i < 3; i++) {
      // Each attempt from a new page session (as many browsers would be).
      const { page, csrf } = await signedIn(b.url);
      results.push((await page.get(`/device?user_code=${wrongCode(2 * i)}`)).status);
      results.push((await page.post('/device/decision', { csrf, user_code: wrongCode(2 * i + 1), action: 'approve', workspace_id: 'ws_b' })).status);
    }
    assert.deepEqual(results, [404, 409, 404, 409, 404, 409]);
    const { page, csrf } = await signedIn(b.url);
    assert.equal((await page.post('/device/decision', { csrf, user_code: victim.body['user_code']!, action: 'approve', workspace_id: 'ws_b' })).status, 429);
    assert.equal((await page.get(`/device?user_code=${victim.body['user_code']!}`)).status, 429);
    b.advance(61_000);
    const ok = await page.post('/device/decision', { csrf, user_code: victim.body['user_code']!, action: 'deny' });
    assert.equal(ok.status, 200, 'after a minute codes are taken again');
  });
});

describe('the endpoints that store a row per request are limited per address and capped', () => {
  let b: OAuthBridge;
  before(async () => {
    b = await startOAuthBridge({ authorizations_per_address: 5, max_pending_codes: 1000 });
  });
  after(() => b.close());

  test('device_authorization: 5 per address, then 429 slow_down with Retry-After; no row is added past the limit', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await askForCode(b.url, `dev_flood_${i}`)).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429]);
    const r = await askForCode(b.url, 'dev_flood_x');
    assert.equal(r.body['error'], 'slow_down');
    assert.equal(b.db.prepare('SELECT COUNT(*) FROM oauth_device_codes').pluck().get(), 5);
  });

  test('the pending-code table is capped for everyone together', async () => {
    const c = await startOAuthBridge({ authorizations_per_address: 1000, max_pending_codes: 3 });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await askForCode(c.url, `dev_cap_${i}`)).status);
      assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
    } finally {
      await c.close();
    }
  });

  test('GET /device without a cookie: a page session per visit is limited per address, and anonymous rows stay bounded', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 65; i++) statuses.push((await fetch(`${b.url}/device`)).status);
    assert.equal(statuses.filter((s) => s === 200).length, 60);
    assert.deepEqual(statuses.slice(60), [429, 429, 429, 429, 429]);
    assert.ok((b.db.prepare('SELECT COUNT(*) FROM oauth_web_sessions').pluck().get() as number) <= 60);
  });
});
