/**
 * PostgreSQL's floor under a clustered call (issue 34): the store operations a cluster node makes for one
 * `POST /v1/calls` with `wait: true`, in the order it makes them, and nothing else: no HTTP, no WebSocket, no
 * agent, no bus or session logic. The same `PgBridgeStore` and SQL as the nodes:
 *
 * 1. the submitting node reads the function's target (`callTarget`) and inserts the call, telling the owner
 *    on the commit (`submitCall`: one statement with its `pg_notify`);
 * 2. the owner hears it on its LISTEN connection and reads the call (`getCall`);
 * 3. the device's answer (here at once) is written fenced by the session, with its `call_changed`, in one
 *    transaction (`transaction` → `fencedCalls`, `saveCall`, `notify`: two round trips and the commit);
 * 4. the waiting node hears `call_changed` and reads the call (`getCall`): the answer.
 *
 * And the least any design on these tables needs: the same without the three reads (the target's, the owner's
 * and the waiter's), which a node could avoid by caching the device's function defaults, sending the call's body
 * in its NOTIFY (under 8000 bytes) and answering the waiter from the `call_changed` alone: two commits (the call
 * before it is forwarded, the outcome before it is answered: "no call record lost in a crash") and two
 * notifications, with the fenced read inside the second.
 *
 * One LISTEN connection serves both roles (one node: the owner and the waiter are the same process, as in
 * the calls part's one-node cluster). The `sent` mark (asynchronous commit, beside the invoke) is left out:
 * nothing waits for it. The calls part's clustered p50 can go no lower than this floor's, whatever the node
 * does; the ratio of the floor's p50 to the single process's says whether "p50 ≤ 1.5×" is within reach on
 * this design.
 */
import pg from 'pg';
import { PgBridgeStore } from '../src/bridge/store/pg-store.js';
import { newCall } from '../src/bridge/call-lifecycle.js';
import { decodeMessage, encodeMessage, nodeChannel } from '../src/bridge/cluster/bus.js';
import type { StoredCall } from '../src/bridge/store.js';
import type { PrivatePostgres } from '../test/helpers/postgres.js';
import { measureTargets, type BenchCounts, type BenchResult } from './stats.js';

const WS = 'ws_floor';
const DEV = 'dev_floor';
const NODE = 'floor';

/**
 * The floor of one clustered call, as two targets measured in interleaved rounds (p50 one in flight,
 * throughput `c.concurrency` in flight): the node's store operations, and the least (no reads).
 */
export async function measureFloor(server: PrivatePostgres, c: BenchCounts, say: (l: string) => void): Promise<{ ops: BenchResult; least: BenchResult }> {
  const url = server.createDatabase(`bench_floor${process.pid}`);
  const store = await PgBridgeStore.open(url, { max: c.concurrency + 4 });
  const listener = new pg.Client({ connectionString: url });
  const waiting = new Map<string, { resolve: (call: StoredCall | undefined) => void; reject: (e: unknown) => void }>();
  try {
    await store.upsertDevice({ workspace_id: WS, device_id: DEV, user_id: 'usr_floor', name: 'Floor', platform: 'linux', functions: [{ id: 'diagnostics.echo' } as never] });
    const { epoch } = await store.claimSession(WS, DEV, NODE, 600_000);
    const channel = nodeChannel(NODE);
    /** Calls of the `least` target: nobody reads them outside the fenced write. */
    const unread = new Set<string>();
    // The owner's step: read the call, write the device's outcome fenced by its session, tell the waiter.
    const answer = async (id: string) => {
      if (!unread.has(id) && !(await store.getCall(WS, id))) throw new Error(`the owner found no call ${id}`);
      await store.transaction(async (tx) => {
        const [f] = await tx.fencedCalls([{ workspace_id: WS, device_id: DEV, epoch, call_id: id }]);
        if (!f?.current || !f.call) throw new Error(`the fenced read refused call ${id}`);
        const at = new Date().toISOString();
        const done: StoredCall = { ...f.call, state: 'completed', updated_at: at, timeline: [...f.call.timeline, { state: 'completed', at }] };
        done.outcome = { call_id: id, function: f.call.function, state: 'completed', output: { value: 'floor' }, error: null, replayed: false, accepted_at: at, started_at: at, finished_at: at, duration_ms: 0 };
        await tx.saveCall(done);
        await tx.notify(channel, encodeMessage({ type: 'call_changed', workspace_id: WS, call_id: id }));
      });
    };
    // The waiter's step: read the call its `call_changed` names.
    const heard = async (id: string) => {
      if (unread.has(id)) return waiting.get(id)?.resolve(undefined);
      const call = await store.getCall(WS, id);
      if (call?.outcome) waiting.get(id)?.resolve(call);
    };
    listener.on('notification', (n) => {
      const m = decodeMessage(n.payload ?? '');
      if (!m || !('call_id' in m)) return;
      const step = m.type === 'call' ? answer(m.call_id) : m.type === 'call_changed' ? heard(m.call_id) : undefined;
      step?.catch((e: unknown) => waiting.get(m.call_id)?.reject(e));
    });
    await listener.connect();
    await listener.query(`LISTEN ${channel}`);
    let n = 0;
    const req = { workspace_id: WS, device_id: DEV, function: 'diagnostics.echo', arguments: { value: 'floor' } };
    const call = (reads: boolean) => async () => {
      const id = `floor_${process.pid}_${n++}`;
      if (!reads) unread.add(id);
      const done = new Promise<StoredCall | undefined>((resolve, reject) => waiting.set(id, { resolve, reject }));
      const target = reads ? await store.callTarget(WS, DEV, req.function) : { user_id: 'usr_floor' };
      if (!target) throw new Error('the floor\'s device is not registered');
      const r = await store.submitCall(newCall(req, id, target.user_id, 'digest', 30_000), encodeMessage({ type: 'call', workspace_id: WS, call_id: id }));
      if (r !== 'sent') throw new Error(`submitCall said ${r}`);
      const out = await done.finally(() => {
        waiting.delete(id);
        unread.delete(id);
      });
      if (reads && out?.outcome?.state !== 'completed') throw new Error(`call ${id} ended ${out?.outcome?.state}`);
      return out;
    };
    say('the PostgreSQL floor of a clustered call: the store operations alone, and the least (no reads)');
    const [ops, least] = await measureTargets(
      [
        { name: 'PostgreSQL floor: a node\'s store operations', call: call(true), close: () => Promise.resolve() },
        { name: 'PostgreSQL floor: two commits, two NOTIFYs, no reads', call: call(false), close: () => Promise.resolve() },
      ],
      c,
      say,
    );
    return { ops: ops!, least: least! };
  } finally {
    await listener.end().catch(() => undefined);
    await store.close().catch(() => undefined);
  }
}
