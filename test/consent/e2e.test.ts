/**
 * Consent acceptance over real processes: the bridge and the agent started by the CLI, runtime calls over
 * the bridge's HTTP API, and a person answering prompts in each provider: the tray's control API over
 * `WS /rpc` (`ui`), the agent's own terminal inside tmux (`tty`), or nobody (`none`). Every decision is
 * checked through what the runtime sees (the call's outcome) and what happened on disk.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CallRecord } from '../../src/bridge/store.js';
import type { RuntimeClient } from '../../src/runtime-client/client.js';
import { cliRun, ids, processStack, tempDir, until } from '../helpers/stack.js';
import { connectUi, type UiClient } from './fixtures/ui-client.js';
import { tmuxStack } from './fixtures/tmux-stack.js';

/** What every stack offers the scenarios. */
interface Stack {
  url: string;
  tokens: { runtime: string; device: string };
  client: RuntimeClient;
  agentLog(): string;
}

type Answer = 'allow_once' | 'deny' | 'remember_session' | 'remember_always';

/** The person in front of one provider. */
interface Prompter {
  /** Waits for this call's prompt; returns what the person sees. */
  shown(callId: string): Promise<string>;
  answer(callId: string, a: Answer): Promise<void>;
  /** Prompts shown so far. */
  count(): Promise<number>;
  /** Waits until this call's prompt is gone for `reason`, and checks nothing is left on screen. */
  gone(callId: string, reason: 'cancelled' | 'timeout'): Promise<void>;
}

interface Harness {
  s: Stack;
  p: Prompter;
  /** The shared folder (`grants.files`, name `Shared`). */
  shared: string;
  dataDir: string;
}

const REQUESTER = { kind: 'agent', id: 'agt_qa', name: 'QA runner' };
const NOT_REQUIRED = { required: false, decision: 'not_required', decided_by: 'policy', remembered: false };
const BY_USER = { required: true, decision: 'allowed', decided_by: 'user', remembered: false };

/** The agent config every stack shares: one read-write shared folder, diagnostics on, no trash. */
function agentExtra(shared: string, more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    grants: { files: [{ path: shared, access: 'read_write', name: 'Shared' }] },
    handlers: { diagnostics: { enabled: true }, files: { use_trash: false } },
    ...more,
  };
}

/** POST /v1/calls with a named requester (what a runtime sends; `RuntimeClient` has no requester). */
async function submit(s: Stack, fn: string, args: Record<string, unknown>, o: { wait?: boolean; confirm_timeout_ms?: number } = {}): Promise<CallRecord> {
  const res = await fetch(s.url + '/v1/calls', {
    method: 'POST',
    headers: { Authorization: `Bearer ${s.tokens.runtime}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      workspace_id: ids.workspace_id,
      device_id: ids.device_id,
      function: fn,
      arguments: args,
      wait: o.wait ?? true,
      // A call that prompts by mistake comes back unfinished (and fails the test) instead of waiting a minute.
      wait_timeout_ms: 20_000,
      requester: REQUESTER,
      ...(o.confirm_timeout_ms ? { confirm_timeout_ms: o.confirm_timeout_ms } : {}),
    }),
  });
  const body = (await res.json()) as CallRecord;
  assert.ok(res.status < 300, `the bridge refused ${fn}: ${JSON.stringify(body)}`);
  return body;
}

/** The call's record once it is terminal. */
async function finished(s: Stack, callId: string): Promise<CallRecord> {
  const r = await s.client.waitTerminal(callId, 30_000);
  assert.ok(r.outcome, `call ${callId} did not finish: ${r.state}`);
  return r;
}

/** A call that must not prompt: completes, with `confirmation.required` false, and the prompt count unchanged. */
async function runsWithoutPrompt(h: Harness, fn: string, args: Record<string, unknown>): Promise<CallRecord> {
  const before = await h.p.count();
  const r = await submit(h.s, fn, args);
  assert.equal(r.outcome?.state, 'completed', `${fn}: ${JSON.stringify(r.outcome?.error)}`);
  assert.deepEqual(r.outcome?.confirmation, NOT_REQUIRED, fn);
  assert.equal(await h.p.count(), before, `${fn} must not prompt`);
  return r;
}

const decisionsCli = async (dataDir: string) => {
  const r = await cliRun(['decisions', '--data-dir', dataDir, '--json']);
  assert.equal(r.code, 0, r.err);
  return JSON.parse(r.out) as { id: number; effect: string; function_id: string; resource: string; scope: string }[];
};

/** The scenarios every provider that can show a prompt must pass. */
function promptScenarios(h: () => Harness, remember: 'remember_session' | 'remember_always') {
  test('public, low and medium-on-a-shared-folder calls complete without a prompt', async () => {
    writeFileSync(join(h().shared, 'readme.txt'), 'shared text');
    await runsWithoutPrompt(h(), 'diagnostics.echo', { value: 1 }); // public
    await runsWithoutPrompt(h(), 'device.info', {}); // public
    const list = await runsWithoutPrompt(h(), 'files.list_dir', { root: 'Shared' }); // low
    assert.match(JSON.stringify(list.outcome?.output), /readme\.txt/);
    const read = await runsWithoutPrompt(h(), 'files.read_text', { root: 'Shared', path: 'readme.txt' }); // medium, granted
    assert.equal((read.outcome?.output as { text: string }).text, 'shared text');
  });

  test('high: the prompt names the function, what will happen and who asks; allow once → completed, decided by the user', async () => {
    const { s, p, shared } = h();
    const { call_id } = await submit(s, 'files.write_text', { root: 'Shared', path: 'allowed.txt', text: 'hello' }, { wait: false });
    const seen = await p.shown(call_id);
    assert.match(seen, /Write a text file/);
    assert.match(seen, /Create allowed\.txt in Shared \(5 bytes\)/);
    assert.match(seen, /QA runner/);
    // The bridge learns the state by a notification of its own, which can trail the prompt.
    await until(async () => (await s.client.getCall(call_id)).state === 'awaiting_confirmation', 10_000, 'the bridge to show awaiting_confirmation');
    assert.equal(existsSync(join(shared, 'allowed.txt')), false, 'nothing is written while the prompt is open');
    await p.answer(call_id, 'allow_once');
    const r = await finished(s, call_id);
    assert.equal(r.outcome?.state, 'completed');
    assert.deepEqual(r.outcome?.confirmation, BY_USER);
    assert.equal(readFileSync(join(shared, 'allowed.txt'), 'utf8'), 'hello');
  });

  test('high: deny → rejected/user_rejected, and the file is never written', async () => {
    const { s, p, shared } = h();
    const { call_id } = await submit(s, 'files.write_text', { root: 'Shared', path: 'denied.txt', text: 'no' }, { wait: false });
    await p.shown(call_id);
    await p.answer(call_id, 'deny');
    const r = await finished(s, call_id);
    assert.equal(r.outcome?.state, 'rejected');
    assert.equal(r.outcome?.error?.type, 'user_rejected');
    assert.equal(r.outcome?.started_at, null, 'the handler never started');
    assert.deepEqual(r.outcome?.confirmation, { required: true, decision: 'denied', decided_by: 'user', remembered: false });
    assert.equal(existsSync(join(shared, 'denied.txt')), false);
  });

  test('allow & remember on files.write_text: the next write to the folder runs without a prompt; after `decisions revoke` it asks again', async () => {
    const { s, p, shared, dataDir } = h();
    const first = await submit(s, 'files.write_text', { root: 'Shared', path: 'remembered-1.txt', text: 'one' }, { wait: false });
    await p.shown(first.call_id);
    await p.answer(first.call_id, remember);
    const r1 = await finished(s, first.call_id);
    assert.deepEqual(r1.outcome?.confirmation, { ...BY_USER, remembered: true });

    const before = await p.count();
    const r2 = await submit(s, 'files.write_text', { root: 'Shared', path: 'remembered-2.txt', text: 'two' });
    assert.equal(r2.outcome?.state, 'completed');
    assert.deepEqual(r2.outcome?.confirmation, { required: true, decision: 'allowed', decided_by: 'remembered', remembered: true });
    assert.equal(await p.count(), before, 'no prompt for a remembered allow');
    assert.equal(readFileSync(join(shared, 'remembered-2.txt'), 'utf8'), 'two');

    const rows = (await decisionsCli(dataDir)).filter((d) => d.function_id === 'files.write_text');
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.deepEqual([rows[0]!.effect, rows[0]!.scope], ['allow', remember === 'remember_always' ? 'always' : 'session']);
    assert.equal(rows[0]!.resource, `files:${shared}`, 'scoped to the folder the prompt showed, never *');
    const revoke = await cliRun(['decisions', 'revoke', String(rows[0]!.id), '--data-dir', dataDir]);
    assert.equal(revoke.code, 0, revoke.err);
    assert.match(revoke.out, /Revoked decision/);

    const third = await submit(s, 'files.write_text', { root: 'Shared', path: 'remembered-3.txt', text: 'three' }, { wait: false });
    await p.shown(third.call_id);
    await p.answer(third.call_id, 'deny');
    assert.equal((await finished(s, third.call_id)).outcome?.error?.type, 'user_rejected');
    assert.equal(existsSync(join(shared, 'remembered-3.txt')), false);
  });

  test('critical files.delete prompts every time, even after the person tried "allow & remember" for it', async () => {
    const { s, p, shared, dataDir } = h();
    writeFileSync(join(shared, 'old-1.txt'), 'x');
    writeFileSync(join(shared, 'old-2.txt'), 'y');
    const first = await submit(s, 'files.delete', { root: 'Shared', path: 'old-1.txt' }, { wait: false });
    const seen = await p.shown(first.call_id);
    assert.match(seen, /Delete a file or folder/);
    assert.match(seen, /Permanently delete old-1\.txt in Shared/);
    await p.answer(first.call_id, 'remember_always');
    const r1 = await finished(s, first.call_id);
    assert.equal(r1.outcome?.state, 'completed');
    assert.deepEqual(r1.outcome?.confirmation, BY_USER, 'a critical answer is never remembered');
    assert.equal(existsSync(join(shared, 'old-1.txt')), false);
    assert.deepEqual((await decisionsCli(dataDir)).filter((d) => d.function_id === 'files.delete'), []);

    const second = await submit(s, 'files.delete', { root: 'Shared', path: 'old-2.txt' }, { wait: false });
    await p.shown(second.call_id);
    await p.answer(second.call_id, 'deny');
    assert.equal((await finished(s, second.call_id)).outcome?.error?.type, 'user_rejected');
    assert.equal(existsSync(join(shared, 'old-2.txt')), true, 'a denied delete deletes nothing');
  });

  test('a prompt nobody answers ends rejected/confirmation_timeout; the call never runs', async () => {
    const { s, p, shared } = h();
    const { call_id } = await submit(s, 'files.write_text', { root: 'Shared', path: 'late.txt', text: 'late' }, { wait: false, confirm_timeout_ms: 2500 });
    await p.shown(call_id);
    const r = await finished(s, call_id);
    assert.equal(r.outcome?.state, 'rejected');
    assert.equal(r.outcome?.error?.type, 'confirmation_timeout');
    assert.equal(r.outcome?.started_at, null);
    assert.deepEqual(r.outcome?.confirmation, { required: true, decision: 'timeout', decided_by: 'system', remembered: false });
    await p.gone(call_id, 'timeout');
    assert.equal(existsSync(join(shared, 'late.txt')), false);
  });

  test('cancel through the bridge while the prompt is open → cancelled, side_effects none, prompt withdrawn', async () => {
    const { s, p, shared } = h();
    const { call_id } = await submit(s, 'files.write_text', { root: 'Shared', path: 'cancelled.txt', text: 'never' }, { wait: false });
    await p.shown(call_id);
    await s.client.cancel(call_id, 'changed my mind');
    const r = await finished(s, call_id);
    assert.equal(r.outcome?.state, 'cancelled');
    assert.equal(r.outcome?.error?.side_effects, 'none');
    assert.equal(r.outcome?.started_at, null);
    assert.equal(r.outcome?.confirmation?.decision, 'withdrawn');
    await p.gone(call_id, 'cancelled');
    assert.equal(existsSync(join(shared, 'cancelled.txt')), false);
  });

  test('`aios-device pause` against the running agent\'s data dir → next call rejected/paused; `resume` → it runs', async () => {
    const { s, dataDir } = h();
    const paused = await cliRun(['pause', '--data-dir', dataDir]);
    assert.equal(paused.code, 0, paused.err);
    let refused: CallRecord;
    try {
      refused = await submit(s, 'diagnostics.echo', { value: 'while paused' });
      assert.equal(refused.outcome?.state, 'rejected');
      assert.equal(refused.outcome?.error?.type, 'paused');
      assert.equal(refused.outcome?.error?.retryable, true);
      assert.equal(refused.outcome?.started_at, null);
    } finally {
      const resumed = await cliRun(['resume', '--data-dir', dataDir]);
      assert.equal(resumed.code, 0, resumed.err);
    }
    const r = await submit(s, 'diagnostics.echo', { value: 'after resume' });
    assert.equal(r.outcome?.state, 'completed');
    assert.deepEqual(r.outcome?.output, { value: 'after resume' });
    const activity = await cliRun(['activity', '--data-dir', dataDir, '--state', 'rejected', '--json']);
    assert.equal(activity.code, 0, activity.err);
    const row = (JSON.parse(activity.out) as { call_id: string; error_type: string }[]).find((x) => x.call_id === refused.call_id);
    assert.equal(row?.error_type, 'paused', 'the refused call is in the activity log');
  });
}

// ---------------------------------------------------------------------------------------------------
describe('ui provider: the tray answers over WS /rpc with the local token', () => {
  let st: Awaited<ReturnType<typeof processStack>>;
  let ui: UiClient;
  let harness: Harness;
  const shared = tempDir('aios-consent-shared-');
  const PROMPT = 'control/notification.prompt';
  const WITHDRAWN = 'control/notification.prompt_withdrawn';

  before(async () => {
    st = await processStack({ agent: agentExtra(shared, { confirmations: { provider: 'ui', timeout_ms: 60_000 } }) });
    const dataDir = join(st.dir, 'agent');
    ui = await connectUi(dataDir);
    await ui.call('control.ui.focus', { focused: true }); // no desktop notification while the UI is in front
    const promptId = async (callId: string) => String((await ui.note(PROMPT, (v) => v['call_id'] === callId))['prompt_id']);
    const p: Prompter = {
      async shown(callId) {
        return JSON.stringify(await ui.note(PROMPT, (v) => v['call_id'] === callId));
      },
      async answer(callId, a) {
        const params =
          a === 'remember_session' || a === 'remember_always'
            ? { answer: 'allow_remember', scope: a === 'remember_session' ? 'session' : 'always' }
            : { answer: a };
        assert.deepEqual(await ui.call('control.prompts.answer', { prompt_id: await promptId(callId), ...params }), { ok: true });
      },
      count: async () => ui.notes.filter((n) => n.method === PROMPT).length,
      async gone(callId, reason) {
        await ui.note(WITHDRAWN, (v) => v['call_id'] === callId && v['reason'] === reason);
        assert.deepEqual((await ui.call('control.prompts.list')).prompts, []);
      },
    };
    harness = { s: st, p, shared: shared, dataDir };
  });
  after(async () => {
    ui?.close();
    await st?.stop();
    rmSync(shared, { recursive: true, force: true });
  });

  promptScenarios(() => harness, 'remember_always');

  test('the prompt event carries who, what and the risk but no argument values; the arguments come on request', async () => {
    const { call_id } = await submit(st, 'files.write_text', { root: 'Shared', path: 'peek.txt', text: 'private words' }, { wait: false });
    const view = await ui.note(PROMPT, (v) => v['call_id'] === call_id);
    assert.equal(view['function_id'], 'files.write_text');
    assert.equal(view['function_name'], 'Write a text file');
    assert.equal(view['sentence'], 'Create peek.txt in Shared (13 bytes)');
    assert.deepEqual(view['requester'], REQUESTER);
    assert.equal(view['permission_level'], 'high');
    assert.equal(view['rememberable'], true);
    assert.doesNotMatch(JSON.stringify(view), /private words/);
    const args = await ui.call('control.prompts.arguments', { prompt_id: view['prompt_id'] });
    assert.equal((args['arguments'] as { text: string }).text, 'private words');
    await ui.call('control.prompts.answer', { prompt_id: view['prompt_id'], answer: 'close' });
    const r = await finished(st, call_id);
    assert.deepEqual([r.outcome?.error?.type, r.outcome?.confirmation?.remembered], ['user_rejected', false]);
    await assert.rejects(ui.call('control.prompts.answer', { prompt_id: view['prompt_id'], answer: 'allow_once' }), /no such prompt/);
  });

  test('the audit trail (agent log, consent database, `aios-device activity`) never holds file contents, tokens or secret-looking values', async () => {
    const SECRET = 'sk_live_9fJ2kLq8ZxR4vT7mW1nB5cY3hD6gP0aE';
    const CONTENT = 'Dear Bob, the quarterly numbers are confidential: 4.2M.';
    const B64 = Buffer.from('%PDF-1.7 confidential binary content, long enough to matter').toString('base64');
    const dataDir = harness.dataDir;
    const localToken = readFileSync(join(dataDir, 'local-token'), 'utf8').trim();

    const echo = await submit(st, 'diagnostics.echo', { value: { api_token: SECRET, note: CONTENT, blob: B64, path: `/tmp/${SECRET}/a.txt` } });
    assert.equal(echo.outcome?.state, 'completed');
    const w = await submit(st, 'files.write_text', { root: 'Shared', path: 'secret.txt', text: `${CONTENT} token=${SECRET}` }, { wait: false });
    await harness.p.shown(w.call_id);
    await harness.p.answer(w.call_id, 'allow_once');
    assert.equal((await finished(st, w.call_id)).outcome?.state, 'completed');
    const read = await submit(st, 'files.read_text', { root: 'Shared', path: 'secret.txt' });
    assert.match(JSON.stringify(read.outcome?.output), /quarterly/, 'the runtime did get the contents');
    const bytes = await submit(st, 'files.write_bytes', { root: 'Shared', path: 'secret.bin', data: B64 }, { wait: false });
    await harness.p.shown(bytes.call_id);
    await harness.p.answer(bytes.call_id, 'deny');
    assert.equal((await finished(st, bytes.call_id)).outcome?.error?.type, 'user_rejected');
    const bad = await submit(st, 'files.write_text', { root: 'Shared', path: 'x.txt', text: CONTENT, token: SECRET });
    assert.equal(bad.outcome?.error?.type, 'invalid_arguments');

    // Stop the agent the way a user does, so its buffered log and batched audit rows are all written.
    assert.equal(await st.agent.kill('SIGTERM'), 0);
    const activity = await cliRun(['activity', '--data-dir', dataDir, '--json', '--limit', '200']);
    assert.equal(activity.code, 0, activity.err);
    const rows = JSON.parse(activity.out) as { call_id: string; args_summary: unknown; state: string }[];
    const row = rows.find((r) => r.call_id === w.call_id);
    // Only the shape: the text's length, the file name; the root's name is free text, so only its length too.
    assert.deepEqual(row?.args_summary, { root: '<string:6>', path: 'secret.txt', text: `<string:${CONTENT.length + 7 + SECRET.length}>` });
    assert.ok(rows.some((r) => r.call_id === echo.call_id), 'the echo call is in the trail');
    assert.ok(rows.some((r) => r.call_id === bytes.call_id && r.state === 'rejected'), 'the denied call is in the trail');
    for (const c of [echo, w, read, bytes, bad]) assert.ok(st.agentLog().includes(c.call_id), `the log mentions the ${c.function} call`);

    const places: [string, Buffer][] = [
      ['agent log', Buffer.from(st.agentLog())],
      ['aios-device activity', Buffer.from(activity.out)],
      ...readdirSync(dataDir).filter((f) => f.startsWith('consent.sqlite')).map((f) => [f, readFileSync(join(dataDir, f))] as [string, Buffer]),
    ];
    assert.ok(places.some(([n]) => n === 'consent.sqlite'));
    const needles = { SECRET, CONTENT, B64, quarterly: 'quarterly', 'device token': st.tokens.device, 'runtime token': st.tokens.runtime, 'local token': localToken };
    for (const [where, buf] of places) {
      for (const [what, needle] of Object.entries(needles)) {
        assert.equal(buf.includes(Buffer.from(needle)), false, `${where} must not contain the ${what}`);
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------------
describe('tty provider: the agent runs in a real terminal (tmux); the person reads the prompt and types', () => {
  let st: Awaited<ReturnType<typeof tmuxStack>>;
  let harness: Harness;
  const shared = tempDir('aios-consent-shared-');
  const HEADER = 'AIOS Device: confirmation needed';
  const prompts = (screen: string) => screen.split(HEADER).length - 1;
  const last = (screen: string) => screen.slice(screen.lastIndexOf(HEADER));

  before(async () => {
    st = await tmuxStack({ agent: agentExtra(shared, { confirmations: { provider: 'tty', timeout_ms: 60_000 } }) });
    let seen = 0;
    const p: Prompter = {
      async shown() {
        // The answer keys line stays on screen after the prompt ends (the countdown line is overwritten).
        const s = await st.waitFor((x) => prompts(x) > seen && last(x).includes('[a] allow once'), 'a new prompt');
        assert.equal(prompts(s), seen + 1, 'prompts come one at a time');
        seen = prompts(s);
        return last(s);
      },
      async answer(_callId, a) {
        const prompt = last(st.screen());
        if (a === 'allow_once') st.keys('a');
        else if (a === 'deny') st.keys('d');
        else if (prompt.includes('this function asks every time')) {
          // Nothing to remember here: "r" does nothing, so the person allows once.
          assert.doesNotMatch(prompt, /allow & remember/);
          st.keys('r');
          st.keys('a');
        } else {
          st.keys('r');
          // A call that names resources first asks what to remember for: only the ones shown.
          if (prompt.includes('Applies to:')) {
            await st.waitFor((x) => last(x).includes('[o] only'), 'the what question');
            st.keys('o');
          }
          await st.waitFor((x) => last(x).includes('Remember for [s] this session or [f] forever?'), 'the scope question');
          st.keys(a === 'remember_session' ? 's' : 'f');
        }
        await st.waitFor((x) => /\n {2}(Allowed|Denied)[^\n]*\.\n/.test(last(x)), 'the answer to show');
      },
      count: async () => prompts(st.screen()),
      async gone(_callId, reason) {
        const said = reason === 'timeout' ? 'Timed out: denied.' : 'Withdrawn: the call was cancelled.';
        await st.waitFor((x) => last(x).includes(said), `"${said}" on screen`);
      },
    };
    harness = { s: st, p, shared, dataDir: st.dataDir };
  });
  after(async () => {
    await st?.stop();
    rmSync(shared, { recursive: true, force: true });
  });

  promptScenarios(() => harness, 'remember_session');

  test('the terminal prompt shows the requester, workspace, risk and countdown, and no argument values until asked', async () => {
    const { call_id } = await submit(st, 'files.write_text', { root: 'Shared', path: 'peek.txt', text: 'private words' }, { wait: false });
    const s = await harness.p.shown(call_id);
    // The bridge attests the runtime (its token entry has no name: runtime-1); what the runtime claims is only a claim.
    assert.match(s, /runtime-1 \(says it is "QA runner"\) in workspace ws_t asks to:/);
    assert.match(s, /Risk: permission level: high · can delete or overwrite data/);
    await st.waitFor((x) => /Time left: \d+ s/.test(last(x)), 'the countdown');
    assert.doesNotMatch(s, /private words/);
    st.keys('v');
    await st.waitFor((x) => last(x).includes('"text": "private words"'), 'the arguments after "v"');
    st.keys('q');
    await st.waitFor((x) => last(x).includes('Closed: denied.'), 'the close');
    const r = await finished(st, call_id);
    assert.equal(r.outcome?.error?.type, 'user_rejected');
  });

  test('SIGTERM stops the agent cleanly (exit 0); killing the tmux session leaves no process behind', async () => {
    assert.equal(await st.stopAgent(), 0);
    await st.stop();
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await until(() => !alive(st.agentPid) && !alive(st.panePid), 10_000, 'the agent and the pane shell to be gone');
  });
});

// ---------------------------------------------------------------------------------------------------
describe('none provider: nobody can be asked; the administrator pre-decides', () => {
  let st: Awaited<ReturnType<typeof processStack>>;
  const shared = tempDir('aios-consent-shared-');
  before(async () => {
    st = await processStack({
      agent: agentExtra(shared, { confirmations: { provider: 'none' }, policy: { 'files.write_text': 'allow', 'files.copy': 'deny', 'files.delete': 'ask' } }),
    });
  });
  after(async () => {
    await st?.stop();
    rmSync(shared, { recursive: true, force: true });
  });

  test('public, low and medium-on-a-shared-folder calls complete', async () => {
    writeFileSync(join(shared, 'a.txt'), 'alpha');
    for (const [fn, args] of [
      ['diagnostics.echo', { value: 2 }],
      ['files.stat', { root: 'Shared', path: 'a.txt' }],
      ['files.read_text', { root: 'Shared', path: 'a.txt' }],
    ] as const) {
      const r = await submit(st, fn, args);
      assert.equal(r.outcome?.state, 'completed', fn);
      assert.deepEqual(r.outcome?.confirmation, NOT_REQUIRED, fn);
    }
  });

  test('high and critical calls that would ask end rejected/confirmation_unavailable and never run', async () => {
    writeFileSync(join(shared, 'keep.txt'), 'keep');
    const high = await submit(st, 'files.mkdir', { root: 'Shared', path: 'newdir' });
    const critical = await submit(st, 'files.delete', { root: 'Shared', path: 'keep.txt' });
    for (const r of [high, critical]) {
      assert.equal(r.outcome?.state, 'rejected', r.function);
      assert.equal(r.outcome?.error?.type, 'confirmation_unavailable', r.function);
      assert.equal(r.outcome?.started_at, null, r.function);
      assert.deepEqual(r.outcome?.confirmation, { required: true, decision: 'unavailable', decided_by: 'system', remembered: false });
    }
    assert.equal(existsSync(join(shared, 'newdir')), false);
    assert.equal(readFileSync(join(shared, 'keep.txt'), 'utf8'), 'keep');
  });

  test('policy allow runs a high function without asking; policy deny refuses with permission_denied', async () => {
    const w = await submit(st, 'files.write_text', { root: 'Shared', path: 'by-policy.txt', text: 'ok' });
    assert.equal(w.outcome?.state, 'completed');
    assert.deepEqual(w.outcome?.confirmation, { required: true, decision: 'allowed', decided_by: 'policy', remembered: false });
    assert.equal(readFileSync(join(shared, 'by-policy.txt'), 'utf8'), 'ok');
    const c = await submit(st, 'files.copy', { root: 'Shared', path: 'by-policy.txt', to_path: 'copy.txt' });
    assert.equal(c.outcome?.state, 'rejected');
    assert.equal(c.outcome?.error?.type, 'permission_denied');
    assert.deepEqual(c.outcome?.confirmation, { required: false, decision: 'denied', decided_by: 'policy', remembered: false });
    assert.equal(existsSync(join(shared, 'copy.txt')), false);
  });

  test('a policy `allow` for a critical function is refused at start: exit 64, naming the key', async () => {
    const dir = tempDir('aios-consent-badpolicy-');
    try {
      const cfg = join(dir, 'agent.json');
      writeFileSync(cfg, JSON.stringify({
        bridge: { url: st.url.replace(/^http/, 'ws') + '/v1/device', token: st.tokens.device },
        identity: { ...ids, device_name: 'Bad policy' },
        data_dir: join(dir, 'data'),
        local_endpoint: { host: '127.0.0.1', port: 0, socket: false },
        policy: { 'files.delete': 'allow' },
      }));
      const r = await cliRun(['run', '--config', cfg]);
      assert.equal(r.code, 64, r.err);
      assert.match(r.err, /policy\.files\.delete/);
      assert.match(r.err, /critical/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
