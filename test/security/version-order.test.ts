/**
 * Issue 27, finding 7: client versions follow semver's order. The old compare split at the first '-' and
 * compared pre-release tags as text, so `min_client_version: 1.0.0-beta.2` refused a `1.0.0-beta.10`
 * client, and `1.0.0-rc-1` passed a `1.0.0-rc-2` minimum. Protocol versions keep their own numeric
 * compare (semver rejects "1.2"). The attack end to end: real WebSocket devices saying hello to a real
 * bridge whose minimum is a pre-release.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import { silentLogger } from '../../src/base/logger.js';
import { BridgeServer } from '../../src/bridge/server.js';
import { compareProtocolVersions, compareVersions, isClientOutdated, negotiateProtocolVersion } from '../../src/bridge/versions.js';
import { bridgeDoc, ids, tempDir, tokens } from '../helpers/stack.js';
import { RogueDevice } from './helpers.js';

test('client versions sort in semver order, pre-releases by numeric identifier', () => {
  const ordered = ['0.9.0', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-beta.2', '1.0.0-beta.10', '1.0.0-rc.1', '1.0.0-rc-1', '1.0.0-rc-2', '1.0.0', '1.0.1', '1.10.0'];
  for (let i = 0; i < ordered.length; i++) {
    for (let j = 0; j < ordered.length; j++) {
      assert.equal(Math.sign(compareVersions(ordered[i]!, ordered[j]!)), Math.sign(i - j), `${ordered[i]} vs ${ordered[j]}`);
    }
  }
  assert.ok(compareVersions('not-a-version', '0.0.1') < 0, 'a version semver cannot read sorts below every version');
  assert.equal(isClientOutdated('not-a-version', '0.0.0'), false, 'the default minimum 0.0.0 refuses no one');
  assert.equal(isClientOutdated('1.0.0-beta.10', '1.0.0-beta.2'), false);
  assert.equal(isClientOutdated('1.0.0-rc-1', '1.0.0-rc-2'), true);
});

test('protocol versions keep a numeric compare of their own', () => {
  assert.ok(compareProtocolVersions('1.2', '1.10') < 0);
  assert.equal(compareProtocolVersions('1.0', '1'), 0);
  assert.ok(compareProtocolVersions('1.2', '1.1') > 0);
  assert.equal(negotiateProtocolVersion('1.2'), '1.2');
  assert.equal(negotiateProtocolVersion('1.1'), '1.1');
  assert.equal(negotiateProtocolVersion('1.9'), '1.2');
  assert.equal(negotiateProtocolVersion('2.0'), null);
});

async function helloWith(minClientVersion: string, clientVersion: string): Promise<{ ok: true } | { ok: false; type: string }> {
  const dir = tempDir();
  const t = tokens();
  const bridge = new BridgeServer(normalizeBridgeConfig(bridgeDoc(dir, t, { min_client_version: minClientVersion })), { log: silentLogger() });
  try {
    const url = await bridge.start();
    try {
      const d = await RogueDevice.connect(url, t.device, ids, { clientVersion });
      d.close();
      return { ok: true };
    } catch (e) {
      return { ok: false, type: String((e as { type?: string }).type ?? (e as Error).message) };
    }
  } finally {
    await bridge.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a bridge whose minimum is 1.0.0-beta.2 accepts a 1.0.0-beta.10 client and refuses 1.0.0-beta.1', async () => {
  assert.deepEqual(await helloWith('1.0.0-beta.2', '1.0.0-beta.10'), { ok: true });
  assert.deepEqual(await helloWith('1.0.0-beta.2', '1.0.0-beta.1'), { ok: false, type: 'client_outdated' });
});

test('a bridge whose minimum is 1.0.0-rc-2 refuses a 1.0.0-rc-1 client and accepts the release', async () => {
  assert.deepEqual(await helloWith('1.0.0-rc-2', '1.0.0-rc-1'), { ok: false, type: 'client_outdated' });
  assert.deepEqual(await helloWith('1.0.0-rc-2', '1.0.0'), { ok: true });
});
