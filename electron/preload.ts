/**
 * The window's preload (sandboxed): exposes `window.aiosDevice`, one typed function per operation (the
 * control methods' derived from the control API's table, src/control/ipc.ts).
 * `ipcRenderer` itself never reaches the page, and the Electron event object is dropped before a
 * notification is handed over. Bundled to CommonJS (scripts/build-electron.mjs) because a sandboxed
 * preload cannot load ES modules or sibling files.
 */
import { contextBridge, ipcRenderer } from 'electron';
import { preloadControlApi } from '../src/control/ipc.js';
import { SHELL_IPC as IPC, type ControlEvent, type DeviceApi } from './ipc-channels.js';

const api: DeviceApi = {
  // One function per control method the window may call, derived from the control API's table: the params
  // cross whole (the agent checks them), so a field the table adds reaches the agent with no edit here.
  control: preloadControlApi((channel, arg) => ipcRenderer.invoke(channel, arg)),
  health: () => ipcRenderer.invoke(IPC.health),
  openExternal: (url) => ipcRenderer.invoke(IPC.openExternal, { url }),
  pickFolder: () => ipcRenderer.invoke(IPC.pickFolder),
  getLoginItem: () => ipcRenderer.invoke(IPC.getLoginItem),
  setLoginItem: (enabled) => ipcRenderer.invoke(IPC.setLoginItem, { enabled }),
  openLogs: () => ipcRenderer.invoke(IPC.openLogs),
  onEvent(listener) {
    const forward = (_e: unknown, ev: ControlEvent): void => listener({ method: ev.method, params: ev.params });
    ipcRenderer.on(IPC.event, forward);
    return () => {
      ipcRenderer.removeListener(IPC.event, forward);
    };
  },
};

contextBridge.exposeInMainWorld('aiosDevice', api);
