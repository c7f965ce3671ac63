/** The device-login client against a server that offers no login: the user is told what is wrong, not "HTTP 404". */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { OAuthClient, OAuthClientError } from '../../src/identity/oauth-client.js';

test('a bridge without device login (404) is named as such, with the fix', async () => {
  const server = http.createServer((_req, res) => res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"type":"not_found"}}'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = new OAuthClient(url);
    await assert.rejects(client.deviceAuthorization({ device_id: 'dev_x', device_name: 'X', platform: 'linux', client_version: '0.1.0', public_jwk: { kty: 'EC' } }), (e: unknown) => {
      assert.ok(e instanceof OAuthClientError);
      assert.equal(e.error, 'login_not_enabled');
      assert.match(e.message, /does not offer device login \(HTTP 404/);
      assert.match(e.message, /`users`/);
      return true;
    });
  } finally {
    server.close();
  }
});
