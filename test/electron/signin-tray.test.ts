/**
 * The tray's sign-in parts, in plain Node (Electron itself cannot run here): the menu says who is signed
 * in where, or that a sign-in is needed, and offers "Sign in…"; "Open browser" through IPC opens only
 * the verification address of the sign-in waiting now, and the sign-in channels validate their arguments.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serveControlApi } from '../../src/control/server.js';
import { isSignInAddress, registerIpc, type IpcInvokeEvent, type IpcMainLike } from '../../electron/ipc.js';
import { IPC, type IpcResult } from '../../electron/ipc-channels.js';
import { RENDERER_URL, isRendererUrl } from '../../electron/renderer-url.js';
import { trayMenuTemplate, traySignInLine, trayStatusLine, type TrayState } from '../../electron/tray-menu.js';
import { trayText } from '../../electron/tray-strings.js';
import { RpcError } from '../../src/protocol/errors.js';

const base: TrayState = { bridge: 'connected', paused: false, promptsWaiting: 0 };
const actions = () => {
  const calls: string[] = [];
  return { calls, a: { open: () => calls.push('open'), pause: () => calls.push('pause'), resume: () => calls.push('resume'), quit: () => calls.push('quit') } };
};

test('the tray menu says who is signed in where', () => {
  const { a } = actions();
  const s: TrayState = { ...base, signin: { state: 'signed_in', user_id: 'usr_alice', workspace_id: 'ws_b', bridge_url: 'https://bridge.example.com' } };
  const labels = trayMenuTemplate(s, a).filter((i) => i.label).map((i) => i.label);
  assert.deepEqual(labels, ['AIOS Device: connected', 'Signed in as usr_alice in ws_b at https://bridge.example.com', 'Open', 'Pause', 'Quit']);
});

test('the sign-in line in Chinese', () => {
  const zh = trayText('zh-CN');
  assert.equal(traySignInLine({ state: 'signed_in', user_id: 'usr_alice', workspace_id: 'ws_b', bridge_url: 'https://b' }, zh), '已以 usr_alice 身份登录到工作空间 ws_b（https://b）');
  const item = trayMenuTemplate({ ...base, signin: { state: 'not_signed_in' }, signInNeeded: true }, actions().a, zh).find((i) => i.label === '登录…');
  assert.ok(item && item.enabled !== false, '"Sign in…" in Chinese, enabled');
});

test('not signed in: the status says a sign-in is needed and "Sign in…" opens the window', () => {
  const { a, calls } = actions();
  for (const [state, line] of [
    ['not_signed_in', 'Not signed in'],
    ['denied', 'Not signed in (the sign-in was denied)'],
    ['expired', 'Not signed in (the code expired)'],
    ['failed', 'Not signed in (the sign-in failed)'],
  ] as const) {
    // main.ts sets signInNeeded from the sign-in state (the icon asks for attention).
    const s: TrayState = { ...base, bridge: 'offline', signin: { state }, signInNeeded: true };
    assert.equal(trayStatusLine(s), 'AIOS Device: offline, sign-in needed');
    const menu = trayMenuTemplate(s, a);
    assert.equal(menu[1]?.label, line);
    const item = menu.find((i) => i.label === 'Sign in…');
    assert.ok(item, `Sign in… offered when ${state}`);
    (item.click as () => void)();
  }
  assert.deepEqual(calls, ['open', 'open', 'open', 'open']);
  const waiting: TrayState = { ...base, signin: { state: 'waiting', user_code: 'WDJB-MJHT' } };
  assert.equal(traySignInLine(waiting.signin!), 'Signing in: waiting for approval of code WDJB-MJHT');
  assert.equal(trayMenuTemplate(base, a).some((i) => i.label === 'Sign in…' || i.label?.startsWith('Signed in')), false, 'a provisioned device shows neither');
});

test('only the waiting sign-in\'s verification address may be opened outside', () => {
  const waiting = { state: 'waiting', verification_uri_complete: 'https://bridge.example.com/device?user_code=WDJB-MJHT' };
  assert.equal(isSignInAddress(waiting.verification_uri_complete, waiting), true);
  assert.equal(isSignInAddress('https://evil.example/', waiting), false);
  assert.equal(isSignInAddress(waiting.verification_uri_complete, { ...waiting, state: 'signed_in' }), false);
  assert.equal(isSignInAddress(waiting.verification_uri_complete, undefined), false);
  const file = { state: 'waiting', verification_uri_complete: 'file:///etc/passwd' };
  assert.equal(isSignInAddress(file.verification_uri_complete, file), false, 'http(s) only');
});

test('the sign-in IPC channels: validated, typed errors, Open browser refused for another address', async () => {
  const handlers = new Map<string, (e: IpcInvokeEvent, arg?: unknown) => Promise<IpcResult>>();
  const ipcMain: IpcMainLike = { handle: (c, fn) => void handlers.set(c, fn), removeHandler: (c) => void handlers.delete(c) };
  const opened: string[] = [];
  const seen: unknown[] = [];
  const reg = registerIpc(ipcMain, {
    // The agent's method as the agent serves it: params checked once, by the control API's table.
    methods: serveControlApi({
      signinStart: async (p) => {
        seen.push(p);
        throw new RpcError(-32602, 'This device is signed in; sign out first.', { type: 'signed_in' });
      },
    }),
    health: () => ({ status: 'ok', bridge: 'offline', version: '0' }),
    isTrustedUrl: isRendererUrl,
    openExternal: (url) => {
      if (url !== 'https://bridge.example.com/device?user_code=A') return false;
      opened.push(url);
      return true;
    },
  });
  const ours: IpcInvokeEvent = { sender: { send: () => undefined, once: () => undefined, isDestroyed: () => false }, senderFrame: { url: RENDERER_URL, parent: null } };
  const call = (c: string, arg?: unknown) => handlers.get(c)!(ours, arg);
  try {
    assert.deepEqual(await call(IPC.signinStart, { bridge_url: 'https://b' }), { ok: false, error: { type: 'signed_in', message: 'This device is signed in; sign out first.' } });
    assert.deepEqual(seen, [{ bridge_url: 'https://b' }]);
    for (const bad of [{ bridge_url: 5 }, { bridge_url: 'x'.repeat(3000) }, { other: 1 }]) {
      const r = await call(IPC.signinStart, bad);
      assert.equal(r.ok ? 'ok' : r.error.type, 'invalid_arguments', JSON.stringify(bad).slice(0, 40));
    }
    assert.equal(seen.length, 1, 'bad arguments never reach the agent');
    assert.deepEqual(await call(IPC.openExternal, { url: 'https://bridge.example.com/device?user_code=A' }), { ok: true, value: { opened: true } });
    const refused = await call(IPC.openExternal, { url: 'https://evil.example/' });
    assert.equal(refused.ok ? 'ok' : refused.error.type, 'permission_denied');
    assert.deepEqual(opened, ['https://bridge.example.com/device?user_code=A']);
    const missing = await call(IPC.signout);
    assert.equal(missing.ok ? 'ok' : missing.error.type, 'device_unavailable', 'an agent without sign-in methods says so');
  } finally {
    reg.dispose();
  }
});
