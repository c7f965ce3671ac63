/**
 * The device-flow suite (device-flow-suite.ts) on PostgreSQL: the login tables of a clustered bridge (migration
 * 0006, src/bridge/store/pg-login-store.ts) on a private PostgreSQL 15 (test/helpers/postgres.ts).
 */
import { after, before } from 'node:test';
import { PgBridgeStore } from '../../src/bridge/store/pg-store.js';
import { PgLoginStore } from '../../src/bridge/store/pg-login-store.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { deviceFlowSuite } from './device-flow-suite.js';

let server: PrivatePostgres;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

deviceFlowSuite('postgres', async () => {
  const bridge = await PgBridgeStore.open(server.createDatabase(`login${process.pid}`), { max: 3 });
  return {
    store: new PgLoginStore(bridge.pool),
    dump: async () => JSON.stringify((await Promise.all(['oauth_tokens', 'oauth_device_codes', 'oauth_devices'].map((t) => bridge.pool.query(`SELECT * FROM ${t}`)))).flatMap((r) => r.rows)),
    close: () => bridge.close(),
  };
});
