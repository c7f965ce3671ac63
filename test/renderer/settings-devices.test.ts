/**
 * Device grants in the Settings screen, in Debian's Chromium against a real bridge and agent and real
 * peers: a CUPS queue (a private cupsd whose queue points at a real ippeveprinter) is found with "Find
 * devices", picked from the list, named, shared; the runtime's call by that name passes the resource
 * check; the name shows in the list and the grant can be removed. A serial pty (socat) is not in the OS's
 * port list, so it is shared by path with a name, and `serial.request` by the name reaches the instrument;
 * once shared it is listed. The admin ceiling is shown and a grant outside it is refused in the page's
 * language. The same screen in zh-CN and in the pseudo-locale: every visible string from the catalogue;
 * axe-core: nothing serious or critical.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCups, startIppEve } from '../../handlers/printer/test/peers.js';
import { Instrument, scale, startPtyPair } from '../peers/serial-pty.js';
import { until } from '../helpers/stack.js';
import { setup } from './stack.js';
import { axe, openScreen, shot, unwrappedText } from './page-checks.js';
import { slow } from '../helpers/wait.js';


test('a printer picked from the device list with a name, and a serial port by path with a name: calls by name pass the resource check', async () => {
  const [ipp, cups, pair] = await Promise.all([startIppEve(), startCups(), startPtyPair()]);
  const q = `aios_${randomBytes(4).toString('hex')}`;
  const add = cups.run('lpadmin', ['-p', q, '-E', '-v', ipp.uri, '-m', 'everywhere']);
  assert.equal(add.status, 0, add.stderr);
  const instrument = await Instrument.open(pair.b, scale('  12.34 kg'));
  const s = await setup({ agent: { handlers: { diagnostics: { enabled: true }, printer: { cups_server: cups.hostPort } } } });
  try {
    await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
    await openScreen(s.page, 'shares');
    await s.page.getByText('Nothing is shared.', { exact: true }).waitFor();
    const before = await s.client.call('printer.get_attributes', { printer: 'front' }, { wait: true });
    assert.equal(before.record.outcome?.error?.type, 'permission_denied', 'not shared yet');

    // Printer: find, pick from the list, name it, share.
    await s.page.getByLabel('Kind of device').selectOption('printers');
    await s.page.getByRole('button', { name: 'Find devices', exact: true }).click();
    const pick = s.page.getByLabel('Devices found');
    await until(async () => (await pick.locator('option').allTextContents()).some((t) => t.includes(q)), 30_000, 'the CUPS queue listed');
    await pick.selectOption(q);
    assert.equal(await s.page.getByLabel('Device (path, name or id)').inputValue(), q, 'picking fills the device field');
    await s.page.getByLabel('Name for it (optional)').fill('front');
    await s.page.getByRole('button', { name: 'Share device', exact: true }).click();
    const printerRow = s.page.locator('#grants li[data-kind="printers"]');
    await printerRow.waitFor();
    assert.equal(await printerRow.locator('span').textContent(), `Printer: front (${q})`);
    const attrs = await s.client.call('printer.get_attributes', { printer: 'front' }, { wait: true });
    assert.equal(attrs.record.outcome?.state, 'completed', JSON.stringify(attrs.record.outcome?.error));
    // Listed again: shown as shared under its name.
    await s.page.getByRole('button', { name: 'Find devices', exact: true }).click();
    await until(async () => (await pick.locator('option').allTextContents()).some((t) => t.includes(`shared as front`)), 30_000, 'listed as shared');

    // Serial: a pty is not in the OS's list, so it is shared by path.
    await s.page.getByLabel('Kind of device').selectOption('serial');
    await s.page.getByRole('button', { name: 'Find devices', exact: true }).click();
    await until(async () => !(await pick.locator('option').allTextContents()).some((t) => t.includes(pair.a)), 30_000, 'listing done');
    await s.page.getByLabel('Device (path, name or id)').fill(pair.a);
    await s.page.getByLabel('Name for it (optional)').fill('scale');
    await s.page.getByRole('button', { name: 'Share device', exact: true }).click();
    await s.page.locator('#grants li[data-kind="serial"]').waitFor();
    const weigh = s.client.call('serial.request', { port: 'scale', write: { text: 'W\r\n' }, until: { delimiter: '\n' } }, { wait: true, confirm_timeout_ms: 60_000 });
    // `serial.request` is medium risk: the page may be asked; it allows once.
    const answered = await Promise.race([weigh.then(() => 'done'), s.page.getByRole('alertdialog').waitFor({ timeout: slow(60_000) }).then(() => 'prompt')]);
    if (answered === 'prompt') await s.page.getByRole('alertdialog').getByRole('button', { name: 'Allow once', exact: true }).click();
    const weighed = await weigh;
    // Answered: the window is back on the screen the prompt interrupted.
    await s.page.locator('#screen-shares:not([hidden])').waitFor();
    assert.equal(weighed.record.outcome?.state, 'completed', JSON.stringify(weighed.record.outcome?.error));
    assert.match(JSON.stringify(weighed.record.outcome?.output), /12\.34 kg/);
    assert.ok(instrument.received.toString('latin1').includes('W\r\n'));
    await s.page.getByRole('button', { name: 'Find devices', exact: true }).click();
    await until(async () => (await pick.locator('option').allTextContents()).some((t) => t.includes(pair.a) && t.includes('shared as scale')), 30_000, 'the shared pty listed');

    await shot(s.page, 'en-settings');
    await axe(s.page, 'en settings');

    // Remove the printer (by keyboard: its button's name says which).
    await s.page.getByRole('button', { name: 'Remove front', exact: true }).focus();
    await s.page.keyboard.press('Enter');
    await printerRow.waitFor({ state: 'detached' });
    const after = await s.client.call('printer.get_attributes', { printer: 'front' }, { wait: true });
    assert.equal(after.record.outcome?.error?.type, 'permission_denied');
    assert.deepEqual(s.problems, []);
  } finally {
    await s.stop();
    await instrument.close();
    cups.run('lpadmin', ['-x', q]);
    await Promise.all([ipp.stop(), cups.stop(), pair.kill()]);
  }
});

test('the admin ceiling is shown and a grant outside it refused; an admin share has no Remove button; zh-CN, en and pseudo-locale', async () => {
  const pair = await startPtyPair();
  const demo = mkdtempSync(join(tmpdir(), 'aios-demo-'));
  const s = await setup({ locale: 'zh-CN', agent: { grants: { serial: [{ path: pair.a, alias: 'scale' }], files: [{ path: demo, alias: 'Demo', access: 'read' }] } } });
  try {
    await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
    await openScreen(s.page, 'shares');
    const row = s.page.locator('#grants li[data-kind="serial"]');
    await row.waitFor();
    assert.equal(await row.textContent(), `串口：scale（${pair.a}）由管理员设置`);
    // The administrator's share is theirs to change: no Remove button beside it.
    assert.equal(await row.getByRole('button').count(), 0, 'no Remove on a share set by the administrator');
    assert.equal(await s.page.locator('#grants li[data-kind="files"]').getByRole('button').count(), 0);
    await s.page.getByLabel('设备类型').selectOption('serial');
    await s.page.locator('#grants-ceiling:not([hidden])').waitFor();
    assert.equal(await s.page.locator('#grants-ceiling').textContent(), '管理员只允许共享以下文件夹：Demo。 管理员只允许共享以下串口：scale。');
    await s.page.getByLabel('设备（路径、名称或 ID）').fill('/dev/ttyS9');
    await s.page.getByRole('button', { name: '共享设备', exact: true }).click();
    await s.page.locator('#error:not([hidden])').waitFor();
    assert.equal(await s.page.locator('#error').textContent(), '不允许：管理员的设置不允许此操作。');
    assert.equal(await s.page.locator('#grants li').count(), 2, 'nothing added');
    assert.equal(await s.page.getByRole('heading', { name: '共享的文件夹和设备' }).count(), 1);
    await shot(s.page, 'zh-CN-settings');
    await axe(s.page, 'zh-CN settings');

    // In English: the kinds in the plural ("these folders", not "these Folder").
    await s.page.goto(`${s.ui.base}/ui/?lang=en`);
    await openScreen(s.page, 'shares');
    await s.page.locator('#grants li[data-kind="serial"]').waitFor();
    await s.page.locator('#device-kind').selectOption('serial');
    await s.page.locator('#grants-ceiling:not([hidden])').waitFor();
    assert.equal(await s.page.locator('#grants-ceiling').textContent(), 'Your administrator allows only these folders: Demo. Your administrator allows only these serial ports: scale.');
    assert.equal(await s.page.locator('#grants li[data-kind="files"]').textContent(), `Folder: Demo (${demo}) (Read only)set by your administrator`);

    await s.page.goto(`${s.ui.base}/ui/?lang=pseudo`);
    await openScreen(s.page, 'shares');
    await s.page.locator('#grants li[data-kind="serial"]').waitFor();
    assert.deepEqual(await unwrappedText(s.page, { within: 'screen-shares' }), [], 'every Shares string from the catalogue');
    await openScreen(s.page, 'functions');
    await s.page.locator('#functions li').first().waitFor();
    assert.deepEqual(await unwrappedText(s.page, { within: 'screen-functions' }), [], 'every Functions string from the catalogue');
    await openScreen(s.page, 'about');
    await s.page.locator('#about-version:not(:empty)').waitFor();
    assert.deepEqual(await unwrappedText(s.page, { within: 'screen-about' }), [], 'every About string from the catalogue');
    // The check can fail.
    await openScreen(s.page, 'functions');
    await s.page.evaluate("document.getElementById('functions').append(Object.assign(document.createElement('li'), { textContent: 'Hard-coded' }))");
    assert.deepEqual(await unwrappedText(s.page, { within: 'screen-functions' }), ['Hard-coded']);
    assert.deepEqual(s.problems, []);
  } finally {
    await s.stop();
    await pair.kill();
    rmSync(demo, { recursive: true, force: true });
  }
});
