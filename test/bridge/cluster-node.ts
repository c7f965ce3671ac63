/**
 * Bridge nodes of a cluster for the cluster tests: each with its own PostgreSQL store (a pool) and bus (its own
 * listening connection), on one database of the run's private PostgreSQL (test/helpers/postgres.ts).
 */
import { silentLogger } from '../../src/base/logger.js';
import type { BusMessage, CatchUpReason } from '../../src/bridge/cluster/bus.js';
import { PgClusterBus } from '../../src/bridge/cluster/pg-bus.js';
import { PgBridgeStore } from '../../src/bridge/store/pg-store.js';
import type { PrivatePostgres } from '../helpers/postgres.js';

/** A node: its store, its bus, what it heard and every catch-up it ran. */
export interface TestNode {
  nodeId: string;
  store: PgBridgeStore;
  bus: PgClusterBus;
  heard: BusMessage[];
  caughtUp: CatchUpReason[];
}

/** Starts node `nodeId` on the database at `url`. */
export async function startNode(url: string, nodeId: string): Promise<TestNode> {
  const store = await PgBridgeStore.open(url, { max: 3 });
  const heard: BusMessage[] = [];
  const caughtUp: CatchUpReason[] = [];
  const bus = new PgClusterBus({ url, nodeId, store, log: silentLogger(), caughtUp: (r) => void caughtUp.push(r), backoffMs: 20, maxBackoffMs: 200 });
  bus.subscribe((m) => heard.push(m));
  await bus.start();
  return { nodeId, store, bus, heard, caughtUp };
}

let n = 0;

/** Nodes `ids` on a fresh database of `server`; closes them after `fn`. */
export async function withNodes(server: PrivatePostgres, ids: string[], fn: (nodes: TestNode[], url: string) => Promise<void>): Promise<void> {
  const url = server.createDatabase(`cluster${process.pid}_${++n}`);
  const nodes: TestNode[] = [];
  try {
    for (const id of ids) nodes.push(await startNode(url, id));
    await fn(nodes, url);
  } finally {
    for (const x of nodes) {
      await x.bus.close();
      await x.store.close();
    }
  }
}
