/**
 * Drives `aios-device login` as its own process and approves it in Chromium, for the tests that run
 * under gnome-keyring.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import type { Page } from 'playwright-core';

/** Chromium flags from TESTING.md. */
// NativeNotifications off: inside the test's private D-Bus session, Chromium would ask for the
// notification service, which activates dunst (installed for the notification tests) only for it to
// die without a display.
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-features=NativeNotifications'];

/** A `login` process and what it printed. */
export interface LoginRun {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  code: Promise<string>;
  url: Promise<string>;
  exit: Promise<number | null>;
}

/** Starts `login --bridge … --data-dir … --device-name … --no-browser` and watches its output. */
export function startLogin(bridgeUrl: string, dataDir: string, deviceName: string): LoginRun {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'test/login/fixtures/login-cli.ts', 'login', '--bridge', bridgeUrl, '--data-dir', dataDir, '--device-name', deviceName, '--no-browser'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: process.env },
  );
  let out = '';
  let err = '';
  let resolveCode!: (c: string) => void;
  let resolveUrl!: (u: string) => void;
  const code = new Promise<string>((r) => (resolveCode = r));
  const url = new Promise<string>((r) => (resolveUrl = r));
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    const c = /enter the code\s+([A-Z]{4}-[A-Z]{4})/.exec(out);
    if (c) resolveCode(c[1]!);
    const u = /open\s+(http:\/\/\S+\/device)\s/.exec(out);
    if (u) resolveUrl(u[1]!);
  });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  return { child, stdout: () => out, stderr: () => err, code, url, exit };
}

/** Signs in on the approval page (when asked to). Passwords are `<user>-pw` in the tests. */
export async function signInPage(page: Page, url: string, user: string): Promise<void> {
  await page.goto(url);
  if (await page.locator('#signin').count()) {
    await page.fill('#username', user);
    await page.fill('#password', `${user}-pw`);
    await page.click('#signin');
  }
}

/** Types the printed code and checks that the decision screen shows that code and the device's name. */
export async function reachDecision(page: Page, run: LoginRun, user: string, deviceName: string): Promise<void> {
  const [code, url] = await Promise.all([run.code, run.url]);
  await signInPage(page, url, user);
  await page.fill('#user_code', code.toLowerCase().replace('-', ''));
  await page.getByRole('button', { name: 'Continue' }).click();
  assert.equal(await page.textContent('#user-code'), code, 'the page shows the code the device printed');
  assert.equal(await page.textContent('#device-name'), deviceName);
  assert.match((await page.textContent('#device-platform')) ?? '', /linux|darwin|win32/);
}
