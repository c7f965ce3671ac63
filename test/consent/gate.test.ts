import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { openConsent, type Consent, type ConsentConfig } from '../../src/app/consent-parts.js';
import { createControlMethods } from '../../src/consent/control-api.js';
import { CONTROL_EVENTS } from '../../src/consent/control-events.js';
import { openConsentDb } from '../../src/consent/db.js';
import { PauseState } from '../../src/consent/pause-state.js';
import type { PromptView } from '../../src/consent/prompt.js';
import { descriptor, request, tempDir } from './helpers.js';

const AUTH = { authenticated: true };

function service(provider: 'ui' | 'none' | 'auto', extra: Partial<ConsentConfig> = {}) {
  const t = tempDir();
  const notified: string[] = [];
  const svc = openConsent(
    { data_dir: t.dir, confirmations: { provider, timeout_ms: 60_000 }, ...extra },
    { notify: (v) => notified.push(v.call_id) },
  );
  const api = createControlMethods(svc);
  const call = (m: string, p?: unknown) => api[m]!(p, AUTH);
  return { svc, api, call, notified, dir: t.dir, done: () => (svc.close(), t.cleanup()) };
}

/** Waits for the next prompt broadcast to the UI. */
async function nextPrompt(svc: Consent): Promise<PromptView> {
  const [v] = (await once(svc.events, CONTROL_EVENTS.prompt)) as [PromptView];
  return v;
}

test('provider none: public and low run, medium without a grant / high / critical end confirmation_unavailable', async () => {
  const s = service('none');
  try {
    const never = new AbortController().signal;
    for (const level of ['public', 'low'] as const) {
      const d = await s.svc.gate.decide(request(descriptor('t.' + level, level)), never);
      assert.equal(d.error, undefined);
      assert.deepEqual(d.confirmation, { required: false, decision: 'not_required', decided_by: 'policy', remembered: false });
    }
    // The dispatcher checked the resource against the grants before consent: a granted folder.
    const granted = await s.svc.gate.decide(request(descriptor('t.medium', 'medium'), { resource: 'files:/srv/shared', resources: [{ kind: 'files', id: '/srv/shared', granted: true }] }), never);
    assert.equal(granted.error, undefined, 'medium on a granted folder runs without asking');
    for (const level of ['medium', 'high', 'critical'] as const) {
      const req = request(descriptor('t.' + level, level), { resource: 'files:/home/me/private' });
      assert.equal(s.svc.gate.needsPrompt(req), false, 'no prompt can be shown, so the call never waits for one');
      const d = await s.svc.gate.decide(req, never);
      assert.equal(d.error?.type, 'confirmation_unavailable');
      assert.equal(d.confirmation.decision, 'unavailable');
    }
  } finally {
    s.done();
  }
});

test('provider ui: the prompt carries name, sentence, requester, workspace, risk and countdown; allow once runs the call', async () => {
  const s = service('ui');
  try {
    const req = request(descriptor('files.write_text', 'high', { name: 'Write a text file', risk: { read_only: false, destructive: true, idempotent: true, physical: false } }));
    assert.equal(s.svc.gate.needsPrompt(req), true);
    const shown = nextPrompt(s.svc);
    const decided = s.svc.gate.decide(req, new AbortController().signal);
    const v = await shown;
    assert.equal(v.function_name, 'Write a text file');
    assert.equal(v.sentence, 'Overwrite report.docx in out (14 KB)');
    assert.deepEqual(v.requester, { kind: 'agent', id: 'agt_1', name: 'Front-desk assistant' });
    assert.equal(v.workspace_id, 'ws_demo');
    assert.equal(v.permission_level, 'high');
    assert.equal(v.risk?.destructive, true);
    assert.ok(Date.parse(v.expires_at) - Date.parse(v.created_at) === 60_000);
    assert.equal(JSON.stringify(v).includes('report.docx"'), false, 'the broadcast carries no argument values');
    assert.deepEqual(s.notified, [req.callId], 'a desktop notification says a prompt is waiting');
    const listed = (await s.call('control.prompts.list')) as { prompts: { prompt_id: string; active: boolean }[] };
    assert.deepEqual(listed.prompts.map((p) => [p.prompt_id, p.active]), [[v.prompt_id, true]]);
    assert.deepEqual(await s.call('control.prompts.arguments', { prompt_id: v.prompt_id }), { prompt_id: v.prompt_id, arguments: req.args });
    const withdrawn = once(s.svc.events, CONTROL_EVENTS.promptWithdrawn);
    await s.call('control.prompts.answer', { prompt_id: v.prompt_id, answer: 'allow_once' });
    const d = await decided;
    assert.equal(d.error, undefined);
    assert.deepEqual(d.confirmation, { required: true, decision: 'allowed', decided_by: 'user', remembered: false });
    assert.deepEqual((await withdrawn)[0], { prompt_id: v.prompt_id, call_id: req.callId, reason: 'answered' });
    // Allow once is not remembered: the next call asks again.
    assert.equal(s.svc.gate.needsPrompt(request(req.descriptor)), true);
  } finally {
    s.done();
  }
});

test('allow & remember skips the prompt next time; revoking makes the next call ask again', async () => {
  const s = service('ui');
  try {
    const d = descriptor('serial.request', 'high');
    const req = request(d, { resource: 'serial:/dev/ttyUSB0' });
    const shown = nextPrompt(s.svc);
    const decided = s.svc.gate.decide(req, new AbortController().signal);
    await s.call('control.prompts.answer', { prompt_id: (await shown).prompt_id, answer: 'allow_remember', scope: 'always' });
    assert.deepEqual((await decided).confirmation, { required: true, decision: 'allowed', decided_by: 'user', remembered: true });

    const next = request(d, { resource: 'serial:/dev/ttyUSB0' });
    assert.equal(s.svc.gate.needsPrompt(next), false);
    const again = await s.svc.gate.decide(next, new AbortController().signal);
    assert.deepEqual(again.confirmation, { required: true, decision: 'allowed', decided_by: 'remembered', remembered: true });
    // Scoped to the resource: another port still asks.
    assert.equal(s.svc.gate.needsPrompt(request(d, { resource: 'serial:/dev/ttyUSB1' })), true);

    const { decisions } = (await s.call('control.decisions.list')) as { decisions: { id: number; function_id: string; resource: string; scope: string }[] };
    assert.deepEqual(decisions.map((x) => [x.function_id, x.resource, x.scope]), [['serial.request', 'serial:/dev/ttyUSB0', 'always']]);
    assert.deepEqual(await s.call('control.decisions.revoke', { id: decisions[0]!.id }), { revoked: true });
    assert.equal(s.svc.gate.needsPrompt(request(d, { resource: 'serial:/dev/ttyUSB0' })), true);
  } finally {
    s.done();
  }
});

test('a critical function prompts even after the user asked to remember, and the remember is not stored', async () => {
  const s = service('ui');
  try {
    const d = descriptor('system.erase_disk', 'critical');
    for (let i = 0; i < 2; i++) {
      const req = request(d);
      assert.equal(s.svc.gate.needsPrompt(req), true);
      const shown = nextPrompt(s.svc);
      const decided = s.svc.gate.decide(req, new AbortController().signal);
      const v = await shown;
      assert.equal(v.rememberable, false);
      await s.call('control.prompts.answer', { prompt_id: v.prompt_id, answer: 'allow_remember', scope: 'always' });
      assert.deepEqual((await decided).confirmation, { required: true, decision: 'allowed', decided_by: 'user', remembered: false });
    }
    assert.deepEqual(await s.call('control.decisions.list'), { decisions: [] });
  } finally {
    s.done();
  }
});

test('deny & remember refuses the next call without a prompt (user_rejected, decided_by remembered)', async () => {
  const s = service('ui');
  try {
    const d = descriptor('camera.capture', 'high');
    const shown = nextPrompt(s.svc);
    const decided = s.svc.gate.decide(request(d), new AbortController().signal);
    // No scope given: a remembered deny lasts until it is revoked (as the docs and the terminal prompt say).
    await s.call('control.prompts.answer', { prompt_id: (await shown).prompt_id, answer: 'deny_remember' });
    assert.equal((await decided).error?.type, 'user_rejected');
    assert.deepEqual(((await s.call('control.decisions.list')) as { decisions: { scope: string }[] }).decisions.map((x) => x.scope), ['always']);
    const next = request(d);
    assert.equal(s.svc.gate.needsPrompt(next), false);
    const again = await s.svc.gate.decide(next, new AbortController().signal);
    assert.equal(again.error?.type, 'user_rejected');
    assert.equal(again.confirmation.decided_by, 'remembered');
  } finally {
    s.done();
  }
});

test('closing the prompt is a deny that is never remembered', async () => {
  const s = service('ui');
  try {
    const d = descriptor('camera.capture', 'high');
    const shown = nextPrompt(s.svc);
    const decided = s.svc.gate.decide(request(d), new AbortController().signal);
    await s.call('control.prompts.answer', { prompt_id: (await shown).prompt_id, answer: 'close' });
    const r = await decided;
    assert.equal(r.error?.type, 'user_rejected');
    assert.equal(r.confirmation.remembered, false);
    assert.equal(s.svc.gate.needsPrompt(request(d)), true);
  } finally {
    s.done();
  }
});

test('a prompt nobody answers times out: confirmation_timeout, retryable, not remembered', async () => {
  const s = service('ui');
  try {
    const withdrawn = once(s.svc.events, CONTROL_EVENTS.promptWithdrawn);
    const r = await s.svc.gate.decide(request(descriptor('camera.capture', 'high'), { timeoutMs: 30 }), new AbortController().signal);
    assert.equal(r.error?.type, 'confirmation_timeout');
    assert.equal(r.error?.retryable, true);
    assert.deepEqual(r.confirmation, { required: true, decision: 'timeout', decided_by: 'system', remembered: false });
    assert.equal(((await withdrawn)[0] as { reason: string }).reason, 'timeout');
  } finally {
    s.done();
  }
});

test('cancelling during the prompt withdraws it at once and ends with side_effects none', async () => {
  const s = service('ui');
  try {
    const ctl = new AbortController();
    const shown = nextPrompt(s.svc);
    const decided = s.svc.gate.decide(request(descriptor('camera.capture', 'high')), ctl.signal);
    const v = await shown;
    const withdrawn = once(s.svc.events, CONTROL_EVENTS.promptWithdrawn);
    ctl.abort();
    assert.deepEqual((await withdrawn)[0], { prompt_id: v.prompt_id, call_id: v.call_id, reason: 'cancelled' });
    const r = await decided;
    assert.equal(r.error?.type, 'cancelled');
    assert.equal(r.error?.sideEffects, 'none');
    assert.equal(r.confirmation.decision, 'withdrawn');
    await assert.rejects(s.call('control.prompts.answer', { prompt_id: v.prompt_id, answer: 'allow_once' }), /no such prompt/);
  } finally {
    s.done();
  }
});

test('admin policy: deny refuses even public functions, allow pre-allows high, disabled functions are reported', async () => {
  const s = service('none', { policy: { 'a.public': 'deny', 'a.high': 'allow' }, functions: { disabled: ['device.notify'] } });
  try {
    const never = new AbortController().signal;
    const denied = await s.svc.gate.decide(request(descriptor('a.public', 'public')), never);
    assert.equal(denied.error?.type, 'permission_denied');
    const allowed = await s.svc.gate.decide(request(descriptor('a.high', 'high')), never);
    assert.deepEqual(allowed.confirmation, { required: true, decision: 'allowed', decided_by: 'policy', remembered: false });
    assert.equal(s.svc.gate.isDisabled('device.notify'), true);
    assert.equal(s.svc.gate.isDisabled('device.info'), false);
  } finally {
    s.done();
  }
});

test('pause from another process (the CLI) is seen by the running service on the next call; status shows it', async () => {
  const s = service('none');
  try {
    const statusEvents: unknown[] = [];
    s.svc.events.on(CONTROL_EVENTS.status, (st) => statusEvents.push(st));
    const cli = openConsentDb(s.dir);
    new PauseState(cli).set(true, 'cli');
    // Another process's write lands in a later event-loop turn of the agent; the agent reads the
    // database's change counter once per turn.
    await new Promise((r) => setImmediate(r));
    assert.equal(s.svc.gate.isPaused(), true);
    const r = await s.svc.gate.decide(request(descriptor('a.low', 'low')), new AbortController().signal);
    assert.equal(r.error?.type, 'paused');
    assert.equal(r.error?.retryable, true);
    const st = (await s.call('control.status')) as { paused: boolean; paused_by: string };
    assert.deepEqual([st.paused, st.paused_by], [true, 'cli']);
    assert.equal((statusEvents.at(-1) as { paused: boolean }).paused, true);
    await s.call('control.resume');
    assert.equal(new PauseState(cli).get().paused, false, 'resume through the control API is visible to the CLI');
    cli.close();
    assert.equal((await s.svc.gate.decide(request(descriptor('a.low', 'low')), new AbortController().signal)).error, undefined);
  } finally {
    s.done();
  }
});

test('every control method answers unauthorized without the local token', async () => {
  const s = service('ui');
  try {
    for (const [name, fn] of Object.entries(s.api)) {
      await assert.rejects(fn({}, { authenticated: false }), (e: Error & { type?: string }) => e.type === 'unauthorized', name);
    }
    assert.ok(Object.keys(s.api).length >= 8);
  } finally {
    s.done();
  }
});

test('auto picks the UI only once one attached as the answerer: control.status never does; detach ends it', async () => {
  const s = service('auto');
  try {
    const req = request(descriptor('camera.capture', 'high'));
    if (!process.stdin.isTTY) assert.equal(s.svc.gate.needsPrompt(req), false);
    await s.call('control.status');
    await s.call('control.prompts.list');
    assert.equal(((await s.call('control.status')) as { active_provider: string }).active_provider, process.stdin.isTTY ? 'tty' : 'none', 'status and list calls mark no UI present');
    const a = (await s.call('control.prompts.attach', { name: 'tray' })) as { answerer_id: string };
    assert.equal(s.svc.gate.needsPrompt(req), true);
    assert.equal(((await s.call('control.status')) as { active_provider: string }).active_provider, 'ui');
    assert.deepEqual(await s.call('control.prompts.heartbeat', { answerer_id: a.answerer_id }), { ok: true });
    assert.deepEqual(await s.call('control.prompts.detach', { answerer_id: a.answerer_id }), { detached: true });
    assert.equal(((await s.call('control.status')) as { active_provider: string }).active_provider, process.stdin.isTTY ? 'tty' : 'none');
    assert.deepEqual(await s.call('control.prompts.heartbeat', { answerer_id: a.answerer_id }), { ok: false }, 'a detached answerer must attach again');
  } finally {
    s.done();
  }
});

test('presence lapses within seconds once the heartbeat stops (the status event says so)', async () => {
  const s = service('auto');
  try {
    const req = request(descriptor('camera.capture', 'high'));
    const a = (await s.call('control.prompts.attach', { name: 'page' })) as { answerer_id: string; heartbeat_ms: number; lapse_ms: number };
    assert.ok(a.lapse_ms <= 10_000, 'lapses within seconds');
    const started = Date.now();
    assert.equal(s.svc.status().active_provider, 'ui');
    // No heartbeat from here on: the next status event is the lapse. (The agent's lapse timer does not hold
    // the process open; this guard does, and fails the test if the lapse never comes.)
    const guard = setTimeout(() => assert.fail('presence did not lapse within 30 s'), 30_000);
    const [st] = (await once(s.svc.events, CONTROL_EVENTS.status).finally(() => clearTimeout(guard))) as [{ active_provider: string }];
    assert.equal(st.active_provider, 'none');
    assert.ok(Date.now() - started >= a.heartbeat_ms, 'not before a heartbeat was missed');
    if (!process.stdin.isTTY) {
      const d = await s.svc.gate.decide(req, new AbortController().signal);
      assert.equal(d.error?.type, 'confirmation_unavailable', 'prompts no longer go to the lapsed page');
    }
  } finally {
    s.done();
  }
});

test('control.activity.list takes "since" as the CLI does (2h, 7d or a time) and refuses a bad one by name', async () => {
  const s = service('none');
  try {
    const at = new Date().toISOString();
    s.svc.trail.onFinished({
      outcome: { call_id: 'c-act', function: 'device.info', state: 'completed', output: {}, output_valid: true, error: null, replayed: false, accepted_at: at, started_at: at, finished_at: at, duration_ms: 1 },
      descriptor: descriptor('device.info', 'public'), args: {}, requester: undefined, workspaceId: 'ws', userId: 'u',
    });
    const ids = async (since: string) => ((await s.call('control.activity.list', { since })) as { calls: { call_id: string }[] }).calls.map((c) => c.call_id);
    assert.deepEqual(await ids('2h'), ['c-act']);
    assert.deepEqual(await ids('2999-01-01T00:00:00Z'), []);
    await assert.rejects(s.call('control.activity.list', { since: 'yesterday-ish' }), (e: { code?: number; message?: string }) => e.code === -32602 && /since: "yesterday-ish"/.test(e.message ?? ''));
  } finally {
    s.done();
  }
});

test('control.activity.list filters by requester (id or name) and by a time range, and refuses a bad "until"', async () => {
  const s = service('none');
  try {
    const finish = (id: string, at: string, requester?: { kind: string; id?: string; name?: string }) =>
      s.svc.trail.onFinished({
        outcome: { call_id: id, function: 'device.info', state: 'completed', output: {}, output_valid: true, error: null, replayed: false, accepted_at: at, started_at: at, finished_at: at, duration_ms: 1 },
        descriptor: descriptor('device.info', 'public'), args: {}, requester, workspaceId: 'ws', userId: 'u',
      });
    finish('c-ann', '2026-01-01T10:00:00.000Z', { kind: 'agent', id: 'ann-1', name: 'Ann' });
    finish('c-bob', '2026-01-02T10:00:00.000Z', { kind: 'agent', id: 'bob-1', name: 'Bob' });
    finish('c-none', '2026-01-03T10:00:00.000Z');
    const ids = async (p: Record<string, unknown>) => ((await s.call('control.activity.list', p)) as { calls: { call_id: string }[] }).calls.map((c) => c.call_id);
    assert.deepEqual(await ids({ requester: 'Ann' }), ['c-ann'], 'by name');
    assert.deepEqual(await ids({ requester: 'bob-1' }), ['c-bob'], 'by id');
    assert.deepEqual(await ids({ requester: 'nobody' }), []);
    assert.deepEqual(await ids({ since: '2026-01-01T12:00:00Z', until: '2026-01-02T12:00:00Z' }), ['c-bob']);
    assert.deepEqual(await ids({ until: '2026-01-02T10:00:00Z' }), ['c-bob', 'c-ann'], 'until is inclusive, newest first');
    await assert.rejects(s.call('control.activity.list', { until: 'soon' }), (e: { code?: number; message?: string }) => e.code === -32602 && /until: "soon"/.test(e.message ?? ''));
    await assert.rejects(s.call('control.activity.list', { requester: 7 }), (e: { code?: number }) => e.code === -32602);
  } finally {
    s.done();
  }
});
