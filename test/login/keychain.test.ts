/** The keychain tests, run against a real gnome-keyring Secret Service in its own D-Bus session. */
import { it } from 'node:test';
import { runUnderKeyring } from './run-sandboxed.js';

it('secret store and device key work against a real Secret Service', () => {
  runUnderKeyring('keychain-session.ts');
});
