/**
 * The CLI's client of the running agent (src/endpoint/local-client.ts) talks over the agent's Unix socket
 * when endpoint.json names one owned by the token's owner, so no listener check on the TCP port is needed
 * (that check exists only on Linux). A real agent with its socket; the TCP address in endpoint.json is made
 * useless to prove which way the requests went; a socket of another user is not used.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callLocal, findRunningAgent } from '../../src/endpoint/local-client.js';
import { freePort } from '../helpers/net.js';
import { inProcessStack } from '../helpers/stack.js';

test('a running agent with a socket is found and called through the socket, not TCP; a socket of another user is not used', async (t) => {
  const folder = mkdtempSync(join(tmpdir(), 'aios-sock-'));
  const socket = join(folder, 'agent.sock');
  const stack = await inProcessStack({ agent: { local_endpoint: { host: '127.0.0.1', port: 0, socket } } });
  t.after(async () => {
    await stack.stop();
    rmSync(folder, { recursive: true, force: true });
  });
  const dataDir = join(stack.dir, 'agent');
  const file = join(dataDir, 'endpoint.json');
  const ep = JSON.parse(readFileSync(file, 'utf8')) as { http: string; socket?: string };
  assert.equal(ep.socket, socket);

  // TCP points at nothing now: only the socket can answer.
  writeFileSync(file, JSON.stringify({ ...ep, http: `http://127.0.0.1:${await freePort()}` }));
  const found = await findRunningAgent(dataDir);
  assert.ok(found, 'found through its socket');
  assert.equal(found.socket, socket);
  const status = (await callLocal(found, 'control.status', {})) as Record<string, unknown>;
  assert.equal(status['paused'], false, JSON.stringify(status));

  // A socket that is not the token owner's is not the agent: with TCP dead as well, nothing is found.
  if (process.getuid?.() === 0) {
    chownSync(socket, 65534, 65534);
    assert.equal(await findRunningAgent(dataDir), undefined, 'another user\'s socket is not used');
    chownSync(socket, 0, 0);
  }
  // With the real TCP address back and the socket not listed, TCP is used (the listener-owner check passes).
  writeFileSync(file, JSON.stringify({ ...ep, socket: undefined }));
  const viaTcp = await findRunningAgent(dataDir);
  assert.ok(viaTcp && viaTcp.socket === undefined, JSON.stringify(viaTcp));
  assert.ok(await callLocal(viaTcp, 'control.status', {}));
});
