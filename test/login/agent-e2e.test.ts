/** Login through the browser, then the real agent connects to the real reference bridge and a call completes. */
import { it } from 'node:test';
import { runUnderKeyring } from './run-sandboxed.js';

it('a logged-in agent serves calls; revocation, a second device and workspace isolation hold', () => {
  runUnderKeyring('agent-e2e-session.ts');
});
