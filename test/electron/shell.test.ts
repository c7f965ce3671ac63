/**
 * The main-process parts of the tray shell that run without the Electron binary (which cannot run on
 * these machines): the IPC handlers against the real consent pieces (openConsent) and its real control methods, with a
 * stand-in `ipcMain` and windows; the reconnect watcher; the tray menu; the renderer URL check.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createControlMethods } from '../../src/shell.js';
import { openConsent } from '../../src/app/consent-parts.js';
import { registerIpc, type IpcInvokeEvent, type IpcMainLike, type IpcSender } from '../../electron/ipc.js';
import { IPC, type IpcResult } from '../../electron/ipc-channels.js';
import { watchConnectivity } from '../../electron/reconnect.js';
import { trayMenuTemplate, trayStatusLine } from '../../electron/tray-menu.js';
import { isRendererUrl, RENDERER_URL } from '../../electron/renderer-url.js';

/** `ipcMain` as the handlers see it: a table of channel → handler. */
class FakeIpcMain implements IpcMainLike {
  readonly handlers = new Map<string, (e: IpcInvokeEvent, arg?: unknown) => Promise<IpcResult>>();
  handle(channel: string, fn: (e: IpcInvokeEvent, arg?: unknown) => Promise<IpcResult>): void {
    assert.ok(!this.handlers.has(channel), `${channel} registered twice`);
    this.handlers.set(channel, fn);
  }
  removeHandler(channel: string): void {
    this.handlers.delete(channel);
  }
  invoke(channel: string, event: IpcInvokeEvent, arg?: unknown): Promise<IpcResult> {
    const h = this.handlers.get(channel);
    assert.ok(h, `no handler for ${channel}`);
    return h(event, arg);
  }
}

/** A window's web contents: records what main sends it; `destroy()` closes it. */
class FakeSender extends EventEmitter implements IpcSender {
  readonly sent: { channel: string; payload: unknown }[] = [];
  private destroyed = false;
  send(channel: string, payload: unknown): void {
    this.sent.push({ channel, payload });
  }
  isDestroyed(): boolean {
    return this.destroyed;
  }
  destroy(): void {
    this.destroyed = true;
    this.emit('destroyed');
  }
}

function setup() {
  const dir = mkdtempSync(join(tmpdir(), 'aios-shell-'));
  const svc = openConsent({ data_dir: dir, confirmations: { provider: 'auto' } }, { notify: () => {} });
  const ipcMain = new FakeIpcMain();
  const refused: string[] = [];
  const reg = registerIpc(ipcMain, {
    methods: createControlMethods(svc),
    health: () => ({ status: 'ok', bridge: 'connected', version: '9.9.9' }),
    isTrustedUrl: isRendererUrl,
    onRefused: (channel, url) => refused.push(`${channel} ${url}`),
  });
  const sender = new FakeSender();
  const ours: IpcInvokeEvent = { sender, senderFrame: { url: RENDERER_URL, parent: null } };
  return {
    svc,
    ipcMain,
    reg,
    sender,
    ours,
    refused,
    cleanup() {
      reg.dispose();
      svc.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('every request channel of the map has a handler, and dispose removes them', () => {
  const s = setup();
  try {
    const channels = Object.values(IPC).filter((c) => c !== IPC.event);
    assert.deepEqual([...s.ipcMain.handlers.keys()].sort(), [...channels].sort());
  } finally {
    s.cleanup();
  }
  assert.equal(s.ipcMain.handlers.size, 0);
});

test('requests from a page that is not ours, from a subframe or with no frame are refused and do nothing', async () => {
  const s = setup();
  try {
    const frames: IpcInvokeEvent['senderFrame'][] = [
      { url: 'https://evil.example/', parent: null },
      { url: 'file:///home/u/index.html', parent: null },
      { url: 'aios-ui://other/index.html', parent: null },
      { url: 'http://127.0.0.1:9527/ui/', parent: null },
      { url: RENDERER_URL, parent: {} },
      null,
    ];
    for (const senderFrame of frames) {
      const r = await s.ipcMain.invoke(IPC.pause, { sender: s.sender, senderFrame });
      assert.deepEqual(r, { ok: false, error: { type: 'unauthorized', message: 'This page may not talk to the agent.' } });
    }
    assert.equal(s.svc.status().paused, false, 'no refused request paused the agent');
    assert.equal(s.refused.length, frames.length);
    assert.equal(s.reg.attached(), 0, 'a refused page is not attached as a UI');
  } finally {
    s.cleanup();
  }
});

test('arguments are validated before the agent sees them', async () => {
  const s = setup();
  try {
    const bad: [string, unknown][] = [
      [IPC.answerPrompt, { prompt_id: 'p1', answer: 'allow_forever' }],
      [IPC.answerPrompt, { prompt_id: '', answer: 'deny' }],
      [IPC.answerPrompt, { prompt_id: 'p1', answer: 'deny', scope: 'forever' }],
      [IPC.answerPrompt, { prompt_id: 'p1', answer: 'deny', extra: 1 }],
      [IPC.revokeDecision, { id: '1' }],
      [IPC.revokeDecision, { id: 1.5 }],
      [IPC.listActivity, { limit: 100_000 }],
      [IPC.listActivity, { limit: 5, requester: 7 }],
      [IPC.listActivity, { limit: 5, state: 'x'.repeat(201) }],
      [IPC.listActivity, { limit: 5, order: 'asc' }],
      [IPC.setFocused, { focused: 'yes' }],
      [IPC.pause, { please: true }],
      [IPC.status, [1, 2]],
      [IPC.promptArguments, 'p1'],
    ];
    for (const [channel, arg] of bad) {
      const r = await s.ipcMain.invoke(channel, s.ours, arg);
      assert.equal(r.ok, false, `${channel} ${JSON.stringify(arg)} was accepted`);
      if (!r.ok) assert.equal(r.error.type, 'invalid_arguments', `${channel} ${JSON.stringify(arg)}`);
    }
    // Valid shape, but no such prompt: the control method's own answer comes back as plain data.
    const none = await s.ipcMain.invoke(IPC.answerPrompt, s.ours, { prompt_id: 'nope', answer: 'deny' });
    assert.equal(none.ok, false);
    if (!none.ok) assert.equal(none.error.type, 'invalid_arguments');
  } finally {
    s.cleanup();
  }
});

test('our page can pause, resume and read health; its calls never make it the prompt answerer (the tray attaches from its main process); a destroyed window gets nothing', async () => {
  const s = setup();
  try {
    assert.equal(s.svc.status().active_provider, 'none');
    const paused = await s.ipcMain.invoke(IPC.pause, s.ours);
    assert.equal(paused.ok && (paused.value as { paused: boolean }).paused, true);
    assert.equal(s.svc.status().paused, true);
    assert.equal(s.svc.status().active_provider, 'none', 'a control call does not attach an answerer (control.prompts.attach does)');
    const resumed = await s.ipcMain.invoke(IPC.resume, s.ours);
    assert.equal(resumed.ok && (resumed.value as { paused: boolean }).paused, false);
    assert.deepEqual(await s.ipcMain.invoke(IPC.health, s.ours), { ok: true, value: { status: 'ok', bridge: 'connected', version: '9.9.9' } });
    const activity = await s.ipcMain.invoke(IPC.listActivity, s.ours, { limit: 5 });
    assert.deepEqual(activity, { ok: true, value: { calls: [] } });
    // The activity screen's filters reach the control method (which refuses a bad time by name).
    const filtered = await s.ipcMain.invoke(IPC.listActivity, s.ours, { limit: 5, function: 'device.info', state: 'completed', requester: 'Ann', since: '1h', until: '2999-01-01T00:00:00Z' });
    assert.deepEqual(filtered, { ok: true, value: { calls: [] } });
    const badTime = await s.ipcMain.invoke(IPC.listActivity, s.ours, { limit: 5, until: 'soon' });
    assert.equal(!badTime.ok && badTime.error.type, 'invalid_arguments');

    s.reg.broadcast('control/notification.status', { paused: false });
    assert.deepEqual(s.sender.sent, [{ channel: IPC.event, payload: { method: 'control/notification.status', params: { paused: false } } }]);

    s.sender.destroy();
    assert.equal(s.reg.attached(), 0);
    assert.equal(s.svc.status().active_provider, 'none', 'still no answerer');
    s.reg.broadcast('control/notification.status', { paused: true });
    assert.equal(s.sender.sent.length, 1, 'nothing is sent to a destroyed window');
  } finally {
    s.cleanup();
  }
});

test('the agent reconnects on resume, unlock, the network coming back and a changed network', () => {
  const pm = new EventEmitter();
  let online = true;
  let print = 'eth0=10.0.0.2';
  const why: string[] = [];
  const w = watchConnectivity((r) => why.push(r), { powerMonitor: pm as never, isOnline: () => online, networkFingerprint: () => print }, 0);
  w.check();
  assert.deepEqual(why, [], 'nothing changed');
  pm.emit('resume');
  pm.emit('unlock-screen');
  online = false;
  print = '';
  w.check();
  assert.deepEqual(why, ['resume', 'unlock-screen'], 'going offline is not a reason to reconnect');
  online = true;
  print = 'wlan0=192.168.1.5';
  w.check();
  print = 'wlan0=192.168.7.9';
  w.check();
  assert.deepEqual(why, ['resume', 'unlock-screen', 'online', 'network-change']);
  w.stop();
  pm.emit('resume');
  assert.equal(why.length, 4, 'stopped watchers do not call back');
  assert.equal(pm.listenerCount('resume') + pm.listenerCount('unlock-screen'), 0);
});

test('the tray menu offers Open, Pause or Resume, and Quit, and says what is going on', () => {
  const calls: string[] = [];
  const actions = { open: () => calls.push('open'), pause: () => calls.push('pause'), resume: () => calls.push('resume'), quit: () => calls.push('quit') };
  const running = trayMenuTemplate({ bridge: 'connected', paused: false, promptsWaiting: 2 }, actions);
  assert.deepEqual(running.filter((i) => i.label).map((i) => i.label), ['AIOS Device: connected, 2 waiting for you', 'Open', 'Pause', 'Quit']);
  for (const item of running) (item.click as (() => void) | undefined)?.();
  assert.deepEqual(calls, ['open', 'pause', 'quit']);
  const paused = trayMenuTemplate({ bridge: 'offline', paused: true, promptsWaiting: 0 }, actions);
  assert.ok(paused.some((i) => i.label === 'Resume'));
  const broken = trayMenuTemplate({ bridge: 'offline', paused: false, promptsWaiting: 0, problem: 'stopped (unauthorized)' }, actions);
  assert.equal(broken.find((i) => i.label === 'Open')?.enabled, false);
  assert.equal(trayStatusLine({ bridge: 'offline', paused: false, promptsWaiting: 0, problem: 'stopped (unauthorized)' }), 'AIOS Device: stopped (unauthorized)');
});

test('only aios-ui://app/ URLs count as our page', () => {
  for (const ok of [RENDERER_URL, 'aios-ui://app/', 'AIOS-UI://APP/index.html#x']) assert.equal(isRendererUrl(ok), true, ok);
  for (const no of ['aios-ui://app.evil/index.html', 'aios-ui://app@evil/x', 'https://app/index.html', 'aios-ui:app/index.html', 'about:blank', '']) {
    assert.equal(isRendererUrl(no), false, no);
  }
});
