/**
 * The tray icon: which state shows for what the agent reports, and the committed pictures (one per state,
 * colour and macOS template, 1× and 2×) are different from each other in shape and legible on light and
 * dark panels. Also the tray's strings in both languages. Electron itself cannot run here: main.ts only
 * loads the file `trayIconFile` names.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { attentionReasons, TRAY_ICON_STATES, trayIconFile, trayIconState, type TrayIconInputs } from '../../electron/tray-icon.js';
import { trayMenuTemplate, trayStatusLine } from '../../electron/tray-menu.js';
import { trayText } from '../../electron/tray-strings.js';

const ICONS = join(import.meta.dirname, '..', '..', 'resources', 'icons');
const idle: TrayIconInputs = { bridge: 'connected', paused: false, promptsWaiting: 0 };

test('each situation shows its own state, the most urgent one winning', () => {
  assert.equal(trayIconState(idle), 'connected');
  assert.equal(trayIconState({ ...idle, bridge: 'connecting' }), 'connecting');
  assert.equal(trayIconState({ ...idle, bridge: 'offline' }), 'offline');
  assert.equal(trayIconState({ ...idle, paused: true }), 'paused');
  assert.equal(trayIconState({ ...idle, callsRunning: 2 }), 'busy');
  assert.equal(trayIconState({ ...idle, promptsWaiting: 1 }), 'attention');
  assert.equal(trayIconState({ ...idle, bridge: 'offline', signInNeeded: true }), 'attention');
  assert.equal(trayIconState({ ...idle, bridge: 'offline', updateRequired: true }), 'attention');
  assert.equal(trayIconState({ ...idle, bridge: 'offline', problem: 'not running' }), 'attention');
  assert.equal(trayIconState({ ...idle, capturing: ['camera'] }), 'capturing');
  // Precedence: a waiting prompt over a capture, a capture over pause and connection, pause over offline,
  // and "busy" only while connected (a call cannot run on an offline device's behalf for long).
  assert.equal(trayIconState({ ...idle, promptsWaiting: 1, capturing: ['camera'], paused: true }), 'attention');
  assert.equal(trayIconState({ ...idle, capturing: ['screen'], paused: true, bridge: 'offline' }), 'capturing');
  assert.equal(trayIconState({ ...idle, paused: true, bridge: 'offline', callsRunning: 1 }), 'paused');
  assert.equal(trayIconState({ ...idle, bridge: 'connecting', callsRunning: 1 }), 'connecting');
  assert.deepEqual(attentionReasons({ ...idle, promptsWaiting: 2, signInNeeded: true, problem: 'stopped (unauthorized)' }), ['prompt', 'sign_in']);
  assert.deepEqual(attentionReasons(idle), []);
});

test('the icon file: template images on macOS, colour elsewhere, and every one of them exists', () => {
  assert.equal(trayIconFile('busy', 'darwin'), 'trayTemplate-busy.png');
  assert.equal(trayIconFile('busy', 'linux'), 'tray-busy.png');
  assert.equal(trayIconFile('busy', 'win32'), 'tray-busy.png');
  for (const state of TRAY_ICON_STATES) {
    for (const platform of ['darwin', 'linux'] as const) {
      const one = png(trayIconFile(state, platform));
      const two = png(trayIconFile(state, platform).replace('.png', '@2x.png'));
      assert.deepEqual([one.width, one.height, two.width, two.height], [16, 16, 32, 32], `${state} on ${platform}`);
    }
  }
});

function png(name: string): PNG {
  return PNG.sync.read(readFileSync(join(ICONS, name)));
}

/** The share of pixels that differ (by more than a rounding error) between two same-sized images' alpha or colour. */
function difference(a: PNG, b: PNG, channels: number[]): number {
  let differ = 0;
  for (let i = 0; i < a.width * a.height; i++) {
    if (channels.some((c) => Math.abs(a.data[i * 4 + c]! - b.data[i * 4 + c]!) > 48)) differ++;
  }
  return differ / (a.width * a.height);
}

test('the states look different: every pair differs in shape (the template alpha) and in the colour picture', () => {
  for (const [i, s] of TRAY_ICON_STATES.entries()) {
    for (const other of TRAY_ICON_STATES.slice(i + 1)) {
      const shape = difference(png(`trayTemplate-${s}@2x.png`), png(`trayTemplate-${other}@2x.png`), [3]);
      assert.ok(shape > 0.02, `${s} vs ${other}: templates differ in ${(shape * 100).toFixed(1)}% of pixels`);
      const colour = difference(png(`tray-${s}@2x.png`), png(`tray-${other}@2x.png`), [0, 1, 2, 3]);
      assert.ok(colour > 0.02, `${s} vs ${other}: colour icons differ in ${(colour * 100).toFixed(1)}% of pixels`);
    }
  }
});

const luminance = (r: number, g: number, b: number): number => {
  const lin = (c: number) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
};
const contrast = (a: number, b: number): number => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);

test('the colour icons are legible on light and dark panels (≥ 3:1 contrast over most of the picture and the badge)', () => {
  for (const state of TRAY_ICON_STATES) {
    const p = png(`tray-${state}@2x.png`);
    for (const [panel, bg] of [['light', 255], ['dark', 24]] as const) {
      const bgL = luminance(bg, bg, bg);
      let visible = 0;
      let badge = 0;
      let badgeVisible = 0;
      for (let y = 0; y < p.height; y++) {
        for (let x = 0; x < p.width; x++) {
          const i = (y * p.width + x) * 4;
          const a = p.data[i + 3]! / 255;
          const mix = (c: number) => p.data[i + c]! * a + bg * (1 - a);
          const ok = contrast(luminance(mix(0), mix(1), mix(2)), bgL) >= 3;
          if (ok) visible++;
          // The badge's quarter (lower right): it must stand out on its own.
          if (x >= p.width * 0.45 && y >= p.height * 0.45) {
            badge++;
            if (ok) badgeVisible++;
          }
        }
      }
      assert.ok(visible / (p.width * p.height) > 0.4, `${state} on a ${panel} panel: ${visible} legible pixels`);
      assert.ok(badgeVisible / badge > 0.4, `${state} on a ${panel} panel: its corner is legible (${badgeVisible}/${badge})`);
    }
  }
});

test('the check can fail: a grey badge-less disc is not legible on a dark panel', () => {
  const dark = luminance(24, 24, 24);
  assert.ok(contrast(luminance(40, 40, 40), dark) < 3);
});

test('the tray speaks the user\'s language: menu and status line from the catalogues', () => {
  const zh = trayText('zh-CN');
  const s = { ...idle, promptsWaiting: 1, callsRunning: 2, capturing: ['camera'] };
  assert.equal(trayStatusLine(s), 'AIOS Device: connected, 1 waiting for you, 2 running, camera in use');
  assert.equal(trayStatusLine(s, zh), 'AIOS 设备：已连接，1 个等待您确认，2 个正在运行，摄像头正在使用');
  assert.equal(trayStatusLine({ ...idle, bridge: 'offline', signInNeeded: true }, zh), 'AIOS 设备：离线，需要登录');
  assert.equal(trayStatusLine({ ...idle, bridge: 'offline', updateRequired: true }), 'AIOS Device: offline, update required');
  const actions = { open() {}, pause() {}, resume() {}, quit() {} };
  assert.deepEqual(trayMenuTemplate({ ...idle, paused: true }, actions, zh).filter((i) => i.label).map((i) => i.label), ['AIOS 设备：已暂停', '打开', '继续', '退出']);
  // Every tray key has a Chinese sentence (none falls back to English or to the key).
  const en = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'electron', 'renderer', 'en.json'), 'utf8')) as Record<string, string>;
  const keys = Object.keys(en).filter((k) => k.startsWith('ui.tray.')).map((k) => k.slice('ui.tray.'.length));
  assert.ok(keys.length >= 20, `${keys.length} tray strings`);
  for (const k of keys.filter((k) => k !== 'start_failed_detail')) assert.notEqual(zh(k), trayText('en')(k), `ui.tray.${k} is translated`);
});
