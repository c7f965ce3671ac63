/**
 * The window's preload (sandboxed): exposes `window.aiosDevice`, one typed function per operation.
 * `ipcRenderer` itself never reaches the page, and the Electron event object is dropped before a
 * notification is handed over. Bundled to CommonJS (scripts/build-electron.mjs) because a sandboxed
 * preload cannot load ES modules or sibling files.
 */
import { contextBridge, ipcRenderer } from 'electron';
import { IPC, type ControlEvent, type DeviceApi } from './ipc-channels.js';

const api: DeviceApi = {
  health: () => ipcRenderer.invoke(IPC.health),
  status: () => ipcRenderer.invoke(IPC.status),
  pause: () => ipcRenderer.invoke(IPC.pause),
  resume: () => ipcRenderer.invoke(IPC.resume),
  listPrompts: () => ipcRenderer.invoke(IPC.listPrompts),
  promptArguments: (promptId) => ipcRenderer.invoke(IPC.promptArguments, { prompt_id: promptId }),
  answerPrompt: (promptId, answer, scope) =>
    ipcRenderer.invoke(IPC.answerPrompt, scope === undefined ? { prompt_id: promptId, answer } : { prompt_id: promptId, answer, scope }),
  setFocused: (focused) => ipcRenderer.invoke(IPC.setFocused, { focused }),
  listDecisions: () => ipcRenderer.invoke(IPC.listDecisions),
  revokeDecision: (id) => ipcRenderer.invoke(IPC.revokeDecision, { id }),
  listActivity: (filter) => ipcRenderer.invoke(IPC.listActivity, filter),
  onEvent(listener) {
    const forward = (_e: unknown, ev: ControlEvent): void => listener({ method: ev.method, params: ev.params });
    ipcRenderer.on(IPC.event, forward);
    return () => {
      ipcRenderer.removeListener(IPC.event, forward);
    };
  },
};

contextBridge.exposeInMainWorld('aiosDevice', api);
