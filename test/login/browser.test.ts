/** The device login end to end in a real browser (Chromium) with a real Secret Service (gnome-keyring). */
import { it } from 'node:test';
import { runUnderKeyring } from './run-sandboxed.js';

it('login, denial, expiry, two devices and revocation, driven in Chromium', () => {
  runUnderKeyring('browser-session.ts');
});
