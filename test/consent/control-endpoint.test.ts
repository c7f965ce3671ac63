/**
 * The control API served by the real local endpoint: a UI connects to `WS /rpc` with the local token,
 * receives the prompt broadcast, answers it; without the token every control method is refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import WebSocket from 'ws';
import { LocalEndpoint, LOCAL_RPC_SUBPROTOCOL } from '../../src/endpoint/local-endpoint.js';
import { openConsent } from '../../src/app/consent-parts.js';
import { createControlMethods } from '../../src/consent/control-api.js';
import { CONTROL_EVENTS } from '../../src/consent/control-events.js';
import { descriptor, request, tempDir } from './helpers.js';

/** A minimal JSON-RPC client over one WebSocket that also collects notifications. */
function client(ws: WebSocket) {
  let id = 0;
  const pending = new Map<number, (m: { result?: unknown; error?: { data?: { type?: string } } }) => void>();
  const notes: { method: string; params: Record<string, unknown> }[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (d) => {
    const m = JSON.parse(String(d));
    if (m.id !== undefined) pending.get(m.id)?.(m);
    else {
      notes.push(m);
      waiters.splice(0).forEach((w) => w());
    }
  });
  return {
    call: (method: string, params: unknown = {}) =>
      new Promise<{ result?: unknown; error?: { data?: { type?: string } } }>((res) => {
        pending.set(++id, res);
        ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      }),
    note: async (method: string, pred: (p: Record<string, unknown>) => boolean = () => true) => {
      for (;;) {
        const n = notes.find((x) => x.method === method && pred(x.params));
        if (n) return n.params;
        await new Promise<void>((r) => waiters.push(r));
      }
    },
  };
}

test('a UI attached over WS /rpc (control.prompts.attach) gets the prompt, answers it, and auto picks it until it disconnects', async () => {
  const t = tempDir();
  const svc = openConsent({ data_dir: t.dir, confirmations: { provider: 'auto' } }, { notify: () => {} });
  const ep = new LocalEndpoint({ dataDir: t.dir, port: 0, socketPath: null, version: 'test' });
  ep.addMethods(createControlMethods(svc));
  for (const name of Object.values(CONTROL_EVENTS)) svc.events.on(name, (p) => ep.broadcast(name, p));
  const info = await ep.start();
  const url = info.http.replace(/^http/, 'ws') + '/rpc';
  try {
    // Without the token: refused (HTTP POST /rpc answers unauthorized for every control method).
    const res = await fetch(info.http + '/rpc', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'control.status' }),
    });
    const body = (await res.json().catch(() => ({}))) as { error?: { data?: { type?: string } } };
    assert.ok(res.status === 401 || body.error?.data?.type === 'unauthorized');

    const ws = new WebSocket(url, LOCAL_RPC_SUBPROTOCOL, { headers: { Authorization: `Bearer ${ep.localToken}` } });
    await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
    const ui = client(ws);
    const req = request(descriptor('camera.capture', 'high'));
    assert.equal(svc.status().active_provider, 'none', 'no UI yet (and no TTY in tests)');
    assert.equal(((await ui.call('control.status')).result as { paused: boolean }).paused, false);
    assert.equal(svc.gate.needsPrompt(req), false, 'a status call (a monitoring script) never makes a UI the answerer');
    assert.equal(svc.status().active_provider, 'none');
    const att = (await ui.call('control.prompts.attach', { name: 'test page' })).result as { answerer_id: string; heartbeat_ms: number };
    assert.ok(att.answerer_id && att.heartbeat_ms > 0);
    assert.equal(svc.gate.needsPrompt(req), true, 'the attached UI is now the prompt provider');

    const decided = svc.gate.decide(req, new AbortController().signal);
    const prompt = await ui.note(CONTROL_EVENTS.prompt);
    assert.equal(prompt['call_id'], req.callId);
    assert.equal(prompt['function_name'], 'Do camera.capture');
    const ans = await ui.call('control.prompts.answer', { prompt_id: prompt['prompt_id'], answer: 'allow_once' });
    assert.deepEqual(ans.result, { ok: true });
    assert.equal((await decided).confirmation.decision, 'allowed');
    assert.equal((await ui.note(CONTROL_EVENTS.promptWithdrawn))['reason'], 'answered');

    await ui.call('control.pause');
    await ui.note(CONTROL_EVENTS.status, (p) => p['paused'] === true);
    await ui.call('control.resume');

    const closed = new Promise((r) => ws.once('close', r));
    ws.close();
    await closed;
    // The UI went away: its connection's close detaches it at once, so prompts are no longer sent to it.
    if (svc.status().active_provider !== 'none') await once(svc.events, CONTROL_EVENTS.status);
    assert.equal(svc.status().active_provider, 'none', 'the closed UI still counts as attached');
  } finally {
    await ep.stop?.();
    svc.close();
    t.cleanup();
  }
});
