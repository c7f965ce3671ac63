import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PromptQueue } from '../../src/consent/prompt-queue.js';
import type { PromptAnswer, PromptProvider, PromptView } from '../../src/consent/prompt.js';

/** A provider that records what is on screen and lets the test answer it. */
class ScriptedProvider implements PromptProvider {
  readonly name = 'ui' as const;
  onScreen: { view: PromptView; answer: (a: PromptAnswer | 'closed') => void } | undefined;
  shown: string[] = [];
  hidden: string[] = [];
  overlap = false;
  available(): boolean {
    return true;
  }
  show(view: PromptView, _args: Record<string, unknown>, signal: AbortSignal): Promise<PromptAnswer | 'closed'> {
    if (this.onScreen) this.overlap = true;
    this.shown.push(view.call_id);
    return new Promise((resolve) => {
      const off = (): void => {
        this.onScreen = undefined;
        this.hidden.push(view.call_id);
      };
      signal.addEventListener('abort', () => {
        off();
        resolve('closed');
      });
      this.onScreen = { view, answer: (a) => (off(), resolve(a)) };
    });
  }
}

function view(callId: string, user = 'u1'): PromptView {
  return {
    prompt_id: `p-${callId}`, call_id: callId, function_id: 'a.b', function_name: 'A', sentence: 's', requester: null, runtime: null,
    workspace_id: 'w', user_id: user, permission_level: 'high', risk: null, resource: '*', resources: [], remember_any: false, rememberable: true,
    created_at: new Date().toISOString(), expires_at: new Date(Date.now() + 60_000).toISOString(),
  };
}

const tick = () => new Promise((r) => setImmediate(r));

test('prompts show one at a time per user, in arrival order', async () => {
  const p = new ScriptedProvider();
  const q = new PromptQueue(() => p);
  const never = new AbortController().signal;
  const r1 = q.ask(view('c1'), {}, 60_000, never);
  const r2 = q.ask(view('c2'), {}, 60_000, never);
  const r3 = q.ask(view('c3'), {}, 60_000, never);
  assert.deepEqual(p.shown, ['c1']);
  assert.deepEqual(q.list().map((x) => [x.view.call_id, x.active]), [['c1', true], ['c2', false], ['c3', false]]);
  p.onScreen?.answer({ answer: 'allow_once' });
  assert.deepEqual(await r1, { kind: 'answer', answer: { answer: 'allow_once' } });
  assert.deepEqual(p.shown, ['c1', 'c2']);
  p.onScreen?.answer({ answer: 'deny' });
  assert.equal((await r2).kind, 'answer');
  p.onScreen?.answer('closed');
  assert.deepEqual(await r3, { kind: 'closed' });
  assert.equal(p.overlap, false);
  assert.equal(q.size(), 0);
});

test('cancelling the call on screen withdraws its prompt at once and shows the next', async () => {
  const p = new ScriptedProvider();
  const q = new PromptQueue(() => p);
  const c1 = new AbortController();
  const r1 = q.ask(view('c1'), {}, 60_000, c1.signal);
  const r2 = q.ask(view('c2'), {}, 60_000, new AbortController().signal);
  c1.abort();
  // Synchronously hidden: the provider's abort listener ran before abort() returned.
  assert.deepEqual(p.hidden, ['c1']);
  assert.deepEqual(await r1, { kind: 'withdrawn' });
  assert.equal(p.onScreen?.view.call_id, 'c2');
  p.onScreen?.answer({ answer: 'allow_once' });
  await r2;
});

test('cancelling a queued call removes it without ever showing it', async () => {
  const p = new ScriptedProvider();
  const q = new PromptQueue(() => p);
  const r1 = q.ask(view('c1'), {}, 60_000, new AbortController().signal);
  const c2 = new AbortController();
  const r2 = q.ask(view('c2'), {}, 60_000, c2.signal);
  const r3 = q.ask(view('c3'), {}, 60_000, new AbortController().signal);
  c2.abort();
  assert.deepEqual(await r2, { kind: 'withdrawn' });
  p.onScreen?.answer({ answer: 'allow_once' });
  await r1;
  assert.equal(p.onScreen?.view.call_id, 'c3');
  assert.deepEqual(p.shown, ['c1', 'c3']);
  p.onScreen?.answer({ answer: 'allow_once' });
  await r3;
});

test('an already-cancelled call never queues a prompt', async () => {
  const p = new ScriptedProvider();
  const q = new PromptQueue(() => p);
  const c = new AbortController();
  c.abort();
  assert.deepEqual(await q.ask(view('c1'), {}, 60_000, c.signal), { kind: 'withdrawn' });
  assert.deepEqual(p.shown, []);
});

test('the countdown ends the prompt as a timeout and hides it', async () => {
  const p = new ScriptedProvider();
  const q = new PromptQueue(() => p);
  const r = await q.ask(view('c1'), {}, 20, new AbortController().signal);
  assert.deepEqual(r, { kind: 'timeout' });
  assert.deepEqual(p.hidden, ['c1']);
  assert.equal(q.size(), 0);
});

test('one prompt on screen at a time, in arrival order, whoever it is for (one agent, one screen)', async () => {
  const shown: string[] = [];
  const provider: PromptProvider = {
    name: 'ui',
    available: () => true,
    show: (v) => (shown.push(v.call_id), new Promise(() => {})),
  };
  const q = new PromptQueue(() => provider);
  const c = new AbortController();
  const rs = [q.ask(view('a1', 'alice'), {}, 60_000, c.signal), q.ask(view('b1', 'bob'), {}, 60_000, c.signal), q.ask(view('a2', 'alice'), {}, 60_000, c.signal)];
  await tick();
  assert.deepEqual(shown, ['a1']);
  assert.deepEqual(q.list().map((x) => [x.view.call_id, x.position]), [['a1', 0], ['b1', 1], ['a2', 2]]);
  c.abort();
  await Promise.all(rs);
});

test('no provider means the prompt is unavailable', async () => {
  const q = new PromptQueue(() => undefined);
  assert.deepEqual(await q.ask(view('c1'), {}, 60_000, new AbortController().signal), { kind: 'unavailable' });
});
