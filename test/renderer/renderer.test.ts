/**
 * The tray's renderer page as a plain web page in Debian's Chromium, against a real agent (started with
 * `startAgent`, confirmations by the `ui` provider, the diagnostics handler on) connected to a real
 * reference bridge. A runtime invokes `diagnostics.confirm` through the bridge; the prompt appears in the
 * page with its name, sentence, requester, risk and countdown; the user clicks Deny; the call ends
 * `rejected / user_rejected`.
 *
 * The page is served by the agent's own local endpoint at `/ui/`, and talks to it same-origin
 * (`/health`, `WS /rpc`) with the local token.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RENDERER_CSP } from '../../src/endpoint/static-ui.js';
import { setup } from './stack.js';
import { openScreen } from './page-checks.js';
import { ids } from '../helpers/stack.js';

test('the page shows a confirmation prompt from a real call and Deny ends the call rejected/user_rejected', async (t) => {
  const s = await setup();
  try {
    const head = await fetch(`${s.ui.base}/ui/`);
    assert.equal(head.headers.get('content-security-policy'), RENDERER_CSP, 'the page is served with its strict policy');
    assert.equal(head.headers.get('access-control-allow-origin'), null, 'and no CORS');
    await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
    await s.page.locator('#agent-state[data-state="connected"]').waitFor();
    await s.page.locator('#pause:not([disabled])').waitFor();
    assert.equal(new URL(s.page.url()).hash, '', 'the token is taken out of the address bar');
    await s.page.locator('#bridge-state[data-state="connected"]').waitFor();
    await s.page.getByText('Nothing is waiting for you.', { exact: true }).waitFor();
    assert.equal(await s.page.locator('#token-form').isVisible(), false, 'no token form once connected');

    const call = s.client.call('diagnostics.confirm', {}, { wait: true, confirm_timeout_ms: 60_000 });
    const prompt = s.page.getByRole('alertdialog');
    await prompt.waitFor();
    assert.equal(await s.page.locator('#prompt-name').textContent(), 'Confirmed no-op');
    assert.equal(await s.page.locator('#prompt-sentence').textContent(), 'Run a diagnostic no-op that needs your confirmation.');
    assert.match((await s.page.locator('#prompt-risk').textContent()) ?? '', /^permission level: high/);
    assert.ok(((await s.page.locator('#prompt-requester').textContent()) ?? '').length > 0, 'the requester is shown');
    const countdown = Number(/^(\d+) sec$/.exec((await s.page.locator('#prompt-countdown').textContent()) ?? '')?.[1]);
    assert.ok(countdown > 50 && countdown <= 60, `the countdown shows the time left (${countdown})`);
    for (const name of ['Allow once', 'Deny', 'View arguments']) assert.ok(await prompt.getByRole('button', { name, exact: true }).isVisible(), `${name} is offered`);
    // diagnostics.confirm always asks: remembering is not offered for it.
    assert.equal(await prompt.getByRole('button', { name: 'Allow & remember', exact: true }).isVisible(), false);
    assert.equal(await prompt.getByRole('button', { name: 'Deny & remember', exact: true }).isVisible(), false);
    assert.equal(await s.page.locator('#prompt-always').isVisible(), false);

    await prompt.getByRole('button', { name: 'View arguments', exact: true }).click();
    await s.page.locator('#prompt-args:not([hidden])').waitFor();
    assert.deepEqual(JSON.parse((await s.page.locator('#prompt-args').textContent()) ?? 'null'), {});

    const shots = mkdtempSync(join(tmpdir(), 'aios-renderer-shots-'));
    try {
      const file = join(shots, 'prompt.png');
      await s.page.screenshot({ path: file, fullPage: true });
      assert.ok(statSync(file).size > 1000, 'the screenshot is a real image');
      assert.deepEqual([...readFileSync(file).subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
      t.diagnostic(`screenshot: ${file} (${statSync(file).size} bytes)`);
    } finally {
      if (!process.env['KEEP_SCREENSHOTS']) rmSync(shots, { recursive: true, force: true });
    }

    await prompt.getByRole('button', { name: 'Deny', exact: true }).click();
    const { record } = await call;
    assert.equal(record.outcome?.state, 'rejected');
    assert.equal(record.outcome?.error?.type, 'user_rejected');
    await prompt.waitFor({ state: 'hidden' });
    await openScreen(s.page, 'activity');
    await s.page.locator(`#activity li[data-call-id="${record.call_id}"][data-state="rejected"]`).waitFor();
    assert.deepEqual(s.problems, []);
  } finally {
    await s.stop();
  }
});

test('Pause in the page pauses the agent, Resume resumes it', async () => {
  const s = await setup();
  try {
    await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
    await s.page.locator('#pause:not([disabled])').waitFor();
    await s.page.getByRole('button', { name: 'Pause', exact: true }).click();
    await s.page.getByRole('button', { name: 'Resume', exact: true }).waitFor();
    assert.equal(s.running.consent.status().paused, true);
    await s.page.locator('#bridge-state[data-state="paused"]').waitFor();
    await s.page.getByRole('button', { name: 'Resume', exact: true }).click();
    await s.page.getByRole('button', { name: 'Pause', exact: true }).waitFor();
    assert.equal(s.running.consent.status().paused, false);
    assert.deepEqual(s.problems, []);
  } finally {
    await s.stop();
  }
});

test('the navigation by keyboard: arrows move along it, Enter shows the screen and marks it current, the focus lands on its heading', async () => {
  const s = await setup();
  try {
    await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
    await s.page.locator('#pause:not([disabled])').waitFor();
    const nav = s.page.getByRole('navigation', { name: 'Screens' });
    assert.equal(await nav.getByRole('button', { name: 'Home', exact: true }).getAttribute('aria-current'), 'page');
    await nav.getByRole('button', { name: 'Home', exact: true }).focus();
    await s.page.keyboard.press('ArrowDown');
    await s.page.keyboard.press('ArrowDown');
    await s.page.keyboard.press('Enter');
    await s.page.locator('#activity-screen:not([hidden])').waitFor();
    assert.equal(await nav.getByRole('button', { name: 'Activity', exact: true }).getAttribute('aria-current'), 'page');
    assert.equal(await nav.getByRole('button', { name: 'Home', exact: true }).getAttribute('aria-current'), null);
    assert.equal(await s.page.evaluate<string>('document.activeElement?.id ?? ""'), 'activity-title', 'the focus on the screen\'s heading');
    assert.equal(await s.page.locator('#screen-home').isHidden(), true, 'one screen at a time');
    await nav.getByRole('button', { name: 'Activity', exact: true }).focus();
    await s.page.keyboard.press('End');
    await s.page.keyboard.press('Space');
    await s.page.locator('#screen-about:not([hidden])').waitFor();
    assert.deepEqual(s.problems, []);
  } finally {
    await s.stop();
  }
});

test('without the token the page asks for it, and a wrong one is refused', async () => {
  const s = await setup();
  try {
    await s.page.goto(`${s.ui.base}/ui/`);
    const form = s.page.locator('#token-form');
    await form.waitFor();
    // Not "disconnected": the page has no token to connect with yet, and says so.
    assert.equal(await s.page.locator('#agent-state').getAttribute('data-state'), 'no_token');
    assert.equal(await s.page.locator('#agent-state').textContent(), 'Agent: waiting for the local token');
    await s.page.locator('#token-input').fill('not-the-token');
    await form.getByRole('button', { name: 'Connect' }).click();
    await s.page.getByRole('alert').filter({ hasText: 'refused this token' }).waitFor();
    assert.equal(await s.page.locator('#prompt').isVisible(), false);
    await s.page.locator('#token-input').fill(s.endpoint.token);
    await form.getByRole('button', { name: 'Connect' }).click();
    await s.page.locator('#agent-state[data-state="connected"]').waitFor();
    await s.page.locator('#pause:not([disabled])').waitFor();
  } finally {
    await s.stop();
  }
});

test('the prompt names the runtime the bridge attested first and what the runtime claims only as "says it is", in English and Chinese', async () => {
  for (const [locale, expected] of [
    ['en-US', 'Front desk (says it is \u201cIT admin\u201d)'],
    ['zh-CN', 'Front desk\uff08\u81ea\u79f0\u201cIT admin\u201d\uff09'],
  ] as const) {
    const s = await setup({ locale, bridge: (t) => ({ runtime_tokens: { [t.runtime]: { workspace_id: ids.workspace_id, name: 'Front desk' } } }) });
    try {
      await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
      await s.page.locator('#agent-state[data-state="connected"]').waitFor();
      const call = s.client.call('diagnostics.confirm', {}, { wait: true, confirm_timeout_ms: 60_000, requester: { kind: 'agent', name: 'IT admin' } });
      await s.page.getByRole('alertdialog').waitFor();
      assert.equal(await s.page.locator('#prompt-requester').textContent(), expected);
      await s.page.locator('[data-answer="deny"]').click();
      assert.equal((await call).record.state, 'rejected');
    } finally {
      await s.stop();
    }
  }
});

test('a prompt the caller cancels leaves the screen saying so; the navigation and Home count what waits', async () => {
  const s = await setup();
  try {
    await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
    await s.page.locator('#pause:not([disabled])').waitFor();
    const { record } = await s.client.call('diagnostics.confirm', {}, { wait: false, confirm_timeout_ms: 60_000 });
    await s.page.getByRole('alertdialog').waitFor();
    assert.equal(await s.page.locator('#nav-prompt-count').textContent(), '1', 'the navigation counts it');
    await s.page.getByRole('button', { name: 'Home', exact: true }).click();
    assert.equal(await s.page.locator('#home-waiting').textContent(), 'Confirmations waiting: 1');
    await s.page.getByRole('button', { name: 'Answer now', exact: true }).click();
    await s.page.getByRole('alertdialog').waitFor();
    await s.client.cancel(record.call_id);
    await s.page.getByRole('alertdialog').waitFor({ state: 'hidden' });
    assert.equal(await s.page.locator('#prompt-ended').textContent(), '\u201cConfirmed no-op\u201d no longer waits for you: the caller cancelled it.');
    assert.equal(await s.page.locator('#nav-prompt-count').isHidden(), true);
    assert.deepEqual(s.problems, []);
  } finally {
    await s.stop();
  }
});
