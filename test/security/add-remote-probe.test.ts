/**
 * `aios/registry.add_remote` is not a port scanner (issue 13, Low 10): whatever sits at the address —
 * nothing (closed port), a TCP service that hangs up, plain HTTP, an HTTPS server with an untrusted
 * certificate — the caller gets one and the same message, so it cannot tell open from closed ports.
 */
import assert from 'node:assert/strict';
import { createServer as createHttp } from 'node:http';
import { createServer as createTcp, type AddressInfo, type Server } from 'node:net';
import { after, before, test } from 'node:test';
import { join } from 'node:path';
import { AdapterRegistry } from '../../src/discovery/registry.js';
import { TrustStore } from '../../src/discovery/trust-store.js';
import { COULD_NOT_FETCH } from '../../src/discovery/remote-adapter.js';
import { tempDir } from '../helpers/stack.js';

const servers: Server[] = [];
const port = (s: Server) => (s.address() as AddressInfo).port;
let closedPort = 0;

before(async () => {
  const hangUp = createTcp((c) => c.destroy());
  const garbage = createTcp((c) => c.end('SSH-2.0-OpenSSH_9.0\r\n'));
  const http = createHttp((_q, r) => r.writeHead(404).end('no'));
  for (const s of [hangUp, garbage, http]) {
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    servers.push(s as Server);
  }
  const probe = createTcp();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  closedPort = port(probe);
  await new Promise<void>((r) => probe.close(() => r()));
});
after(() => {
  for (const s of servers) s.close();
});

test('closed, hanging-up, non-TLS and plain-HTTP ports all answer the same message', async () => {
  const reg = new AdapterRegistry({ dirs: [], desktopDirs: [], trust: TrustStore.of([]), dataDir: join(tempDir(), 'data'), watch: false });
  await reg.start();
  try {
    const messages = new Set<string>();
    for (const p of [closedPort, ...servers.map(port)]) {
      const err = await reg.addRemote(`https://127.0.0.1:${p}`).then(() => null, (e: Error) => e.message);
      assert.ok(err, `port ${p} was refused`);
      messages.add(err);
    }
    assert.deepEqual([...messages], [COULD_NOT_FETCH]);
  } finally {
    await reg.stop();
  }
});
