/** Where the built-in trust keys are found: in the package, or beside app.asar in the packaged tray app. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { builtinTrustDir } from '../../src/discovery/trust-store.js';
import { PROJECT_ROOT } from '../../src/version.js';

test('the package\'s resources/trust first; in the packaged app, the one in process.resourcesPath', () => {
  const dir = mkdtempSync(join(tmpdir(), 'aios-trust-'));
  try {
    assert.equal(builtinTrustDir(undefined), join(PROJECT_ROOT, 'resources', 'trust'));
    // Packaged: the package root is app.asar (no resources inside), the keys are extraResources.
    const asar = join(dir, 'app.asar');
    mkdirSync(asar);
    assert.equal(builtinTrustDir(dir, asar), undefined);
    mkdirSync(join(dir, 'resources', 'trust'), { recursive: true });
    assert.equal(builtinTrustDir(dir, asar), join(dir, 'resources', 'trust'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
