/**
 * Runs a test file inside `scripts/with-keyring.sh` (a private D-Bus session with an unlocked
 * gnome-keyring) and fails with its output when it fails.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Runs `test/login/<file>` under the keyring script with node's test runner; asserts it passed. */
export function runUnderKeyring(file: string, extraEnv: Record<string, string> = {}): void {
  const r = spawnSync(join(root, 'scripts', 'with-keyring.sh'), [process.execPath, '--import', 'tsx', '--test', '--test-reporter=spec', join('test', 'login', file)], {
    cwd: root,
    encoding: 'utf8',
    // NODE_TEST_CONTEXT would make the inner runner skip its files silently (it thinks it is nested).
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_TEST_CONTEXT')), ...extraEnv, AIOS_KEYRING_SANDBOX: '1' },
    timeout: 240_000,
  });
  assert.equal(r.status, 0, `${file} failed under gnome-keyring:\n${r.stdout}\n${r.stderr}`);
  const passed = /ℹ pass (\d+)/.exec(r.stdout);
  assert.ok(passed && Number(passed[1]) > 0, `${file} ran no tests:\n${r.stdout}\n${r.stderr}`);
  process.stderr.write(r.stdout);
}
