/**
 * Consent is built, then started (issue 29 §1): building the pieces over the consent database starts
 * no timer, `start()` starts the pause poll that notices a pause made by another process with no call
 * made, and `close()` closes the database.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { openConsent } from '../../src/app/consent-parts.js';
import { CONTROL_EVENTS } from '../../src/consent/control-events.js';
import { openConsentDb } from '../../src/consent/db.js';
import { PauseState } from '../../src/consent/pause-state.js';
import { tempDir } from '../consent/helpers.js';
import { alive } from '../helpers/wait.js';

/** Runs `fn` while counting the timers it sets. */
function timersSetBy<T>(fn: () => T): { value: T; timers: number } {
  const real = { setInterval: globalThis.setInterval, setTimeout: globalThis.setTimeout };
  let timers = 0;
  globalThis.setInterval = ((...a: Parameters<typeof setInterval>) => (timers++, real.setInterval(...a))) as typeof setInterval;
  globalThis.setTimeout = ((...a: Parameters<typeof setTimeout>) => (timers++, real.setTimeout(...a))) as typeof setTimeout;
  try {
    return { value: fn(), timers };
  } finally {
    Object.assign(globalThis, real);
  }
}

test('building consent starts no timer; start() polls the pause switch, so a pause from another process is announced with no call; close() closes the database', async () => {
  const t = tempDir();
  const { value: consent, timers } = timersSetBy(() => openConsent({ data_dir: t.dir, confirmations: { provider: 'none' } }, { notify: () => {} }));
  try {
    assert.equal(timers, 0, 'building the gate, the prompt queue, the pause switch and the audit trail sets no timer');
    const cli = openConsentDb(t.dir);
    try {
      const announced = once(consent.events, CONTROL_EVENTS.status) as Promise<[{ paused: boolean; paused_by: string }]>;
      const started = timersSetBy(() => consent.start({ pausePollMs: 20 }));
      assert.equal(started.timers, 1, 'start() sets the pause poll');
      new PauseState(cli).set(true, 'cli');
      const [st] = await alive(announced);
      assert.deepEqual([st.paused, st.paused_by], [true, 'cli']);
    } finally {
      cli.close();
    }
  } finally {
    consent.close();
    t.cleanup();
  }
  assert.equal(consent.db.open, false);
});
