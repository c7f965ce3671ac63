/**
 * Issue 29 §1: adding a control method is one table entry and one handler. A test build adds one and finds
 * it, with no other edit, in the agent's served methods (with its params checked once), the Electron IPC
 * channels, the preload's `window.aiosDevice.control` and the page's typed client. And the preload passes
 * a method's params whole: `answerPrompt` carries `resource_scope` (the old preload dropped it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Object as Obj, String as Str } from '@sinclair/typebox';
import { CONTROL_API, defineControlMethod } from '../../src/control/api.js';
import { controlClient } from '../../src/control/client.js';
import { controlChannel, preloadControlApi } from '../../src/control/ipc.js';
import { serveControl, serveControlApi, type ControlMethods } from '../../src/control/server.js';
import { registerIpc, type IpcInvokeEvent, type IpcMainLike } from '../../electron/ipc.js';
import type { DeviceApi, IpcResult } from '../../electron/ipc-channels.js';
import { RENDERER_URL, isRendererUrl } from '../../electron/renderer-url.js';
import type { ControlTable } from '../../src/control/api.js';

/**
 * The page's IPC transport (electron/renderer/transports.ts), loaded by a computed path: it is DOM code,
 * type-checked with the renderer's own tsconfig, not with the tests' (Node) one.
 */
const TRANSPORTS = ['..', '..', 'electron', 'renderer', 'transports.js'].join('/');
const { ipcTransport } = (await import(TRANSPORTS)) as { ipcTransport(api: DeviceApi, table: ControlTable): { call(method: string, params: object): Promise<unknown> } };

type Handler = (e: IpcInvokeEvent, arg?: unknown) => Promise<IpcResult>;

/** `ipcMain` and the preload's `ipcRenderer.invoke` joined: what the window sends reaches main's handlers. */
function wire(methods: ControlMethods, table = CONTROL_API as typeof CONTROL_API) {
  const handlers = new Map<string, Handler>();
  const ipcMain: IpcMainLike = { handle: (c, fn) => void handlers.set(c, fn), removeHandler: (c) => void handlers.delete(c) };
  const reg = registerIpc(ipcMain, { methods, table, health: () => ({ status: 'ok', bridge: 'offline', version: '0' }), isTrustedUrl: isRendererUrl });
  const ours: IpcInvokeEvent = { sender: { send: () => undefined, once: () => undefined, isDestroyed: () => false }, senderFrame: { url: RENDERER_URL, parent: null } };
  const invoke = (channel: string, arg: unknown): Promise<unknown> => {
    const h = handlers.get(channel);
    return h ? h(ours, arg) : Promise.reject(new Error(`no handler for ${channel}`));
  };
  return { handlers, reg, invoke };
}

test('a method added to the table (and given a handler) is served, and reaches IPC, the preload and the page client with no other edit', async () => {
  const table = {
    ...CONTROL_API,
    echoNote: defineControlMethod('control.test.echo', Obj({ text: Str({ maxLength: 10 }) }), Obj({ text: Str() })),
  };
  const seen: unknown[] = [];
  const methods = serveControl(table, {
    echoNote: ({ text }) => {
      seen.push(text);
      return { text: text.toUpperCase() };
    },
  });
  // The agent serves it under its wire name.
  assert.deepEqual(Object.keys(methods), ['control.test.echo']);
  assert.deepEqual(await methods['control.test.echo']!({ text: 'hi' }, { authenticated: true }), { text: 'HI' });
  await assert.rejects(methods['control.test.echo']!({ text: 'hi' }, { authenticated: false }), /local token/);

  const w = wire(methods, table as typeof CONTROL_API);
  try {
    // IPC: its channel is registered next to today's.
    assert.ok(w.handlers.has(controlChannel(table.echoNote)), 'the IPC channel of the new method');
    assert.ok(w.handlers.has(controlChannel(CONTROL_API.status)));
    // The preload: a function for it, which goes over that channel.
    const preload = preloadControlApi(w.invoke, table);
    assert.deepEqual(await preload.echoNote({ text: 'via ipc' }), { ok: true, value: { text: 'VIA IPC' } });
    // The page: its typed client over the window's transport (the preload's API).
    const api = { control: preload, health: async () => ({ ok: true, value: { status: 'ok', bridge: 'offline', version: '0' } }), onEvent: () => () => undefined } as unknown as DeviceApi;
    const transport = ipcTransport(api, table);
    const page = controlClient((m, p) => transport.call(m, p), table);
    assert.deepEqual(await page.echoNote({ text: 'page' }), { text: 'PAGE' });
    // Params are checked once, by the agent's method: the IPC and the preload pass them whole.
    const tooLong = await preload.echoNote({ text: 'x'.repeat(11) });
    assert.equal(tooLong.ok, false);
    if (!tooLong.ok) assert.equal(tooLong.error.type, 'invalid_arguments');
    const extra = await w.invoke(controlChannel(table.echoNote), { text: 'a', more: 1 });
    assert.deepEqual(extra, { ok: false, error: { type: 'invalid_arguments', message: 'more is not an allowed property' } });
    await assert.rejects(page.echoNote({ text: 5 as unknown as string }), (e: Error & { type?: string }) => e.type === 'invalid_arguments' && /text must be string/.test(e.message));
    assert.deepEqual(seen, ['hi', 'via ipc', 'page'], 'bad params never reached the handler');
  } finally {
    w.reg.dispose();
  }
});

test('a method the table keeps from the window has no IPC channel and no preload function', () => {
  const w = wire({});
  try {
    assert.equal(CONTROL_API.attachAnswerer.window, false);
    assert.equal(w.handlers.has(controlChannel(CONTROL_API.attachAnswerer)), false);
    assert.equal('attachAnswerer' in preloadControlApi(w.invoke), false);
    assert.equal('listGrants' in preloadControlApi(w.invoke), true);
  } finally {
    w.reg.dispose();
  }
});

test("the preload's answerPrompt carries resource_scope to the agent", async () => {
  const seen: unknown[] = [];
  const w = wire(serveControlApi({ answerPrompt: (p) => (seen.push(p), { ok: true }) }));
  try {
    const preload = preloadControlApi(w.invoke);
    assert.deepEqual(await preload.answerPrompt({ prompt_id: 'p1', answer: 'allow_remember', scope: 'always', resource_scope: 'any' }), { ok: true, value: { ok: true } });
    assert.deepEqual(seen, [{ prompt_id: 'p1', answer: 'allow_remember', scope: 'always', resource_scope: 'any' }]);
  } finally {
    w.reg.dispose();
  }
});

test('the table states the bounds: an answerer name over 100 characters and a grant without an entry are refused before any handler', async () => {
  const seen: unknown[] = [];
  const methods = serveControl(CONTROL_API, {
    attachAnswerer: (p) => {
      seen.push(p);
      return { answerer_id: 'a1', heartbeat_ms: 1000, lapse_ms: 3000 };
    },
    addGrant: (p) => {
      seen.push(p);
      throw new Error('not reached');
    },
  });
  const ctx = { authenticated: true };
  assert.deepEqual(await methods['control.prompts.attach']!({ name: 'x'.repeat(100) }, ctx), { answerer_id: 'a1', heartbeat_ms: 1000, lapse_ms: 3000 });
  // The old handler cut a longer name silently.
  await assert.rejects(methods['control.prompts.attach']!({ name: 'x'.repeat(101) }, ctx), (e: Error & { data?: { type?: string } }) => e.data?.type === 'invalid_arguments');
  await assert.rejects(methods['control.grants.add']!({ kind: 'files' }, ctx), (e: Error & { data?: { type?: string } }) => e.data?.type === 'invalid_arguments' && /entry/.test(e.message));
  assert.deepEqual(seen, [{ name: 'x'.repeat(100) }]);
});
