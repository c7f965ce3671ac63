/** The store suite (test/bridge/store-suite.ts) on SQLite: today's BridgeStore behind the async interface. */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteBridgeStore } from '../../src/bridge/store/sqlite-store.js';
import { tempDir } from '../helpers/stack.js';
import { storeSuite } from './store-suite.js';

storeSuite('sqlite', async () => {
  const dir = tempDir();
  return {
    open: async () => SqliteBridgeStore.open(join(dir, 'bridge.sqlite')),
    remove: async () => rmSync(dir, { recursive: true, force: true }),
  };
});
