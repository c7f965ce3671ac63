/** The device-login client against a bridge that offers no login: the user is told what is wrong, not "HTTP 404". */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { silentLogger } from '../../src/base/logger.js';
import { startBridge } from '../../src/app/start-bridge.js';
import { normalizeBridgeConfig } from '../../src/config/bridge-config.js';
import { OAuthClient, OAuthClientError } from '../../src/identity/oauth-client.js';
import { tempDir } from '../helpers/stack.js';

test('a reference bridge without `users` (no device login) is named as such, with the fix', async () => {
  const dir = tempDir();
  // The real bridge, as `aios-device bridge` starts it from a config that lists no users.
  const bridge = await startBridge(normalizeBridgeConfig({ data_dir: join(dir, 'b'), listen: { host: '127.0.0.1', port: 0 } }), silentLogger());
  try {
    const client = new OAuthClient(bridge.url);
    await assert.rejects(client.deviceAuthorization({ device_id: 'dev_x', device_name: 'X', platform: 'linux', client_version: '0.1.0', public_jwk: { kty: 'EC' } }), (e: unknown) => {
      assert.ok(e instanceof OAuthClientError);
      assert.equal(e.error, 'login_not_enabled');
      assert.match(e.message, /does not offer device login \(HTTP 40[45]/);
      assert.match(e.message, /`users`/);
      return true;
    });
  } finally {
    await bridge.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
