/** The tray says what is capturing and which capture page is attached (from the media handler's status). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { trayMenuTemplate, trayStatusLine } from '../../electron/tray-menu.js';

const actions = { open() {}, pause() {}, resume() {}, quit() {} };

test('a running capture shows in the status line, and the attached capture page in the menu', () => {
  const base = { bridge: 'connected' as const, paused: false, promptsWaiting: 0 };
  assert.equal(trayStatusLine(base), 'AIOS Device: connected');
  assert.equal(trayStatusLine({ ...base, capturing: ['camera', 'camera', 'microphone'] }), 'AIOS Device: connected, camera in use, microphone in use');
  const menu = trayMenuTemplate({ ...base, captureProviders: ['capture page'] }, actions);
  assert.deepEqual(menu.slice(0, 2).map((i) => i.label), ['AIOS Device: connected', 'Capture provider: capture page']);
  assert.equal(trayMenuTemplate(base, actions)[1]!.type, 'separator', 'no provider line when none is attached');
});
