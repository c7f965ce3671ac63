/**
 * The Settings screen follows grants changed elsewhere: with the page open in Chromium against a real
 * agent, a grant added and removed through the agent's control API (as another window does) appears in
 * and leaves the page's list without a reload (`control/notification.grants` on `WS /rpc`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { localRpc, setup } from './stack.js';
import { openScreen } from './page-checks.js';
import { slow } from '../helpers/wait.js';

test('a grant added and removed in another window shows up and goes away in an open Settings screen', { timeout: slow(120_000) }, async () => {
  const s = await setup();
  const rpc = localRpc(() => s.ui.base, () => s.endpoint.token);
  try {
    await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
    await openScreen(s.page, 'shares');
    await s.page.getByText('Nothing is shared.', { exact: true }).waitFor();
    await rpc('control.grants.add', { kind: 'serial', entry: { path: '/dev/ttyS0', alias: 'scale' } });
    const row = s.page.locator('#grants li[data-kind="serial"]');
    await row.waitFor({ timeout: slow(30_000) });
    assert.match((await row.locator('span').textContent()) ?? '', /scale/);
    assert.deepEqual(await rpc('control.grants.remove', { kind: 'serial', id: 'scale' }), { removed: true });
    await row.waitFor({ state: 'detached', timeout: 30_000 });
    await s.page.getByText('Nothing is shared.', { exact: true }).waitFor();
    assert.deepEqual(s.problems, []);
  } finally {
    await s.stop();
  }
});
