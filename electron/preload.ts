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
  signinStatus: () => ipcRenderer.invoke(IPC.signinStatus),
  signinStart: (bridgeUrl) => ipcRenderer.invoke(IPC.signinStart, bridgeUrl ? { bridge_url: bridgeUrl } : {}),
  signinCancel: () => ipcRenderer.invoke(IPC.signinCancel),
  signout: () => ipcRenderer.invoke(IPC.signout),
  openExternal: (url) => ipcRenderer.invoke(IPC.openExternal, { url }),
  listGrants: () => ipcRenderer.invoke(IPC.listGrants),
  addGrant: (kind, entry) => ipcRenderer.invoke(IPC.addGrant, { kind, entry }),
  removeGrant: (kind, id) => ipcRenderer.invoke(IPC.removeGrant, { kind, id }),
  grantCandidates: (kind) => ipcRenderer.invoke(IPC.grantCandidates, { kind }),
  listFunctions: () => ipcRenderer.invoke(IPC.listFunctions),
  setFunction: (id, enabled) => ipcRenderer.invoke(IPC.setFunction, { id, enabled }),
  getSettings: () => ipcRenderer.invoke(IPC.getSettings),
  setLogLevel: (level) => ipcRenderer.invoke(IPC.setLogLevel, { level }),
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
