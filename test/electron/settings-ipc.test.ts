/**
 * The tray window's Settings over IPC, without the Electron binary (which cannot run here): the new
 * channels against a real agent's control methods (grants, functions, log level, About), their argument
 * checks, the shell operations routed to main's own functions; and the Linux autostart entry on a real
 * (temporary) config folder.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerIpc, type IpcInvokeEvent, type IpcMainLike, type IpcSender } from '../../electron/ipc.js';
import { IPC, type IpcResult } from '../../electron/ipc-channels.js';
import { RENDERER_URL, isRendererUrl } from '../../electron/renderer-url.js';
import { AUTOSTART_FILE, LinuxAutostart, autostartDir, desktopEntry, quoteExecArg } from '../../electron/autostart-linux.js';
import type { ControlMethods } from '../../src/shell.js';
import { inProcessStack } from '../helpers/stack.js';

class FakeIpcMain implements IpcMainLike {
  readonly handlers = new Map<string, (e: IpcInvokeEvent, arg?: unknown) => Promise<IpcResult>>();
  handle(channel: string, fn: (e: IpcInvokeEvent, arg?: unknown) => Promise<IpcResult>): void {
    this.handlers.set(channel, fn);
  }
  removeHandler(channel: string): void {
    this.handlers.delete(channel);
  }
  invoke(channel: string, event: IpcInvokeEvent, arg?: unknown): Promise<IpcResult> {
    return this.handlers.get(channel)!(event, arg);
  }
}

const sender: IpcSender = { send: () => undefined, once: () => undefined, isDestroyed: () => false };
const ours: IpcInvokeEvent = { sender, senderFrame: { url: RENDERER_URL, parent: null } };

test('Settings over IPC: grants, functions, log level and About reach the real agent; shell operations go to main', async () => {
  const s = await inProcessStack({ agent: { handlers: { diagnostics: { enabled: true }, files: { use_trash: false } } } });
  const ipcMain = new FakeIpcMain();
  const shellCalls: string[] = [];
  const reg = registerIpc(ipcMain, {
    methods: s.running.control as unknown as ControlMethods,
    health: () => ({ status: 'ok', bridge: 'connected', version: '0' }),
    isTrustedUrl: isRendererUrl,
    shell: {
      pickFolder: async () => (shellCalls.push('pick'), '/picked'),
      getLoginItem: async () => ({ supported: true, enabled: false }),
      setLoginItem: async (on) => (shellCalls.push(`login ${on}`), { supported: true, enabled: on }),
      openLogs: async () => (shellCalls.push('logs'), { opened: '/logs' }),
    },
  });
  try {
    const call = (c: string, arg?: unknown) => ipcMain.invoke(c, ours, arg);
    const folder = join(s.dir, 'shared');
    mkdirSync(folder);
    const added = await call(IPC.addGrant, { kind: 'files', entry: { path: folder, alias: 'Docs', access: 'read' } });
    assert.equal(added.ok, true, JSON.stringify(added));
    const list = await call(IPC.listGrants);
    assert.ok(list.ok && (list.value as { grants: { files: { alias: string }[] } }).grants.files.some((g) => g.alias === 'Docs'));
    assert.deepEqual(await call(IPC.removeGrant, { kind: 'files', id: 'Docs' }), { ok: true, value: { removed: true } });

    const off = await call(IPC.setFunction, { id: 'diagnostics.echo', enabled: false });
    assert.deepEqual(off, { ok: true, value: { function: { id: 'diagnostics.echo', enabled: false, admin_disabled: false } } });
    assert.equal(s.running.functions.isDisabled('diagnostics.echo'), true);
    const fns = await call(IPC.listFunctions);
    assert.ok(fns.ok && (fns.value as { functions: { id: string; enabled: boolean }[] }).functions.some((f) => f.id === 'diagnostics.echo' && !f.enabled));
    await call(IPC.setFunction, { id: 'diagnostics.echo', enabled: true });

    assert.deepEqual(await call(IPC.setLogLevel, { level: 'fatal' }), { ok: true, value: { log_level: 'fatal' } });
    const about = await call(IPC.getSettings);
    assert.ok(about.ok && (about.value as { data_dir: string }).data_dir === join(s.dir, 'agent'));
    const cands = await call(IPC.grantCandidates, { kind: 'nope' });
    assert.equal(!cands.ok && cands.error.type, 'invalid_arguments');

    // Shapes checked before the agent sees them.
    for (const [c, arg] of [
      [IPC.addGrant, { kind: 'files' }],
      [IPC.addGrant, { kind: '', entry: 'x' }],
      [IPC.removeGrant, { kind: 'files', id: 3 }],
      [IPC.setFunction, { id: 'diagnostics.echo', enabled: 'no' }],
      [IPC.setLogLevel, { level: 'x', more: 1 }],
      [IPC.setLoginItem, { enabled: 1 }],
      [IPC.pickFolder, { path: '/' }],
    ] as [string, unknown][]) {
      const r = await call(c, arg);
      assert.equal(!r.ok && r.error.type, 'invalid_arguments', `${c} ${JSON.stringify(arg)}`);
    }
    assert.equal(s.running.functions.isDisabled('diagnostics.echo'), false, 'a refused request changed nothing');

    assert.deepEqual(await call(IPC.pickFolder), { ok: true, value: '/picked' });
    assert.deepEqual(await call(IPC.setLoginItem, { enabled: true }), { ok: true, value: { supported: true, enabled: true } });
    assert.deepEqual(await call(IPC.openLogs), { ok: true, value: { opened: '/logs' } });
    assert.deepEqual(shellCalls, ['pick', 'login true', 'logs']);
    // A page that is not ours gets nothing, shell operations included.
    const evil = await ipcMain.invoke(IPC.pickFolder, { sender, senderFrame: { url: 'https://evil.example/', parent: null } });
    assert.equal(!evil.ok && evil.error.type, 'unauthorized');
    assert.equal(shellCalls.length, 3);
  } finally {
    reg.dispose();
    await s.stop();
  }
});

test('without shell operations (a shell that offers none) the channels answer device_unavailable', async () => {
  const ipcMain = new FakeIpcMain();
  const reg = registerIpc(ipcMain, { methods: {}, health: () => ({ status: 'ok', bridge: 'offline', version: '0' }), isTrustedUrl: isRendererUrl });
  const r = await ipcMain.invoke(IPC.getLoginItem, ours);
  assert.equal(!r.ok && r.error.type, 'device_unavailable');
  reg.dispose();
});

test('Linux autostart: an XDG entry written, read back, switched off, and a foreign file left alone', () => {
  const home = mkdtempSync(join(tmpdir(), 'aios-autostart-'));
  try {
    assert.equal(autostartDir({}, home), join(home, '.config', 'autostart'));
    assert.equal(autostartDir({ XDG_CONFIG_HOME: '/x/cfg' }, home), '/x/cfg/autostart');
    assert.equal(autostartDir({ XDG_CONFIG_HOME: 'relative' }, home), join(home, '.config', 'autostart'), 'a relative XDG_CONFIG_HOME is ignored');

    const a = new LinuxAutostart({ env: {}, home });
    assert.equal(a.isEnabled(), false);
    a.enable({ exec: '/opt/AIOS Device/aios-device', args: ['--config', '/home/u/100% $HOME/c.yaml'] });
    assert.equal(a.isEnabled(), true);
    const text = readFileSync(join(home, '.config', 'autostart', AUTOSTART_FILE), 'utf8');
    assert.match(text, /^\[Desktop Entry\]\nType=Application\nName=AIOS Device\n/);
    assert.match(text, /^Exec="\/opt\/AIOS Device\/aios-device" --config "\/home\/u\/100%% \\\\\$HOME\/c.yaml"$/m);
    assert.equal(statSync(a.file).mode & 0o777, 0o644);

    // Switched off by the desktop's own settings (Hidden=true): reported off.
    writeFileSync(a.file, text.replace('Terminal=false', 'Hidden=true'));
    assert.equal(a.isEnabled(), false);
    assert.equal(a.disable(), true);
    assert.equal(a.isEnabled(), false);
    assert.equal(a.disable(), true, 'nothing to remove is fine');

    // A file of that name we did not write stays.
    writeFileSync(a.file, '[Desktop Entry]\nType=Application\nExec=someone-else\n');
    assert.equal(a.isEnabled(), false);
    assert.equal(a.disable(), false);
    assert.equal(readFileSync(a.file, 'utf8'), '[Desktop Entry]\nType=Application\nExec=someone-else\n');
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

test('Exec quoting follows the Desktop Entry spec', () => {
  assert.equal(quoteExecArg('/usr/bin/aios'), '/usr/bin/aios');
  assert.equal(quoteExecArg('a b'), '"a b"');
  assert.equal(quoteExecArg('say "hi"'), '"say \\"hi\\""');
  assert.equal(quoteExecArg('$HOME'), '"\\$HOME"');
  assert.equal(quoteExecArg('`x`'), '"\\`x\\`"');
  assert.equal(quoteExecArg('50%'), '50%%');
  assert.equal(quoteExecArg(''), '""');
  assert.throws(() => quoteExecArg('a\nb'), /line break/);
  // The string-level escape doubles a backslash after quoting: four in the file for one in the argument.
  assert.match(desktopEntry({ exec: '/bin/x', args: ['a\\b'] }), /^Exec=\/bin\/x "a\\\\\\\\b"$/m);
  assert.match(desktopEntry({ exec: '/bin/x', name: 'A\nB' }), /^Name=A B$/m);
});
