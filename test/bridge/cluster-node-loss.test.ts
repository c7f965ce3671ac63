/**
 * Losing the owner node mid-call (issue 34): three real `aios-device bridge` processes on a private PostgreSQL
 * 15, and many simulated devices (bench/sim-device.ts, default 500; `AIOS_NODE_LOSS_DEVICES=N` for another
 * count), all connected to node A, each keeping its own at-most-once ledger (every call id its handler ran,
 * and its outcome). Every device has a call running on it when node A is SIGKILLed; calls are also being
 * submitted to node A at that moment (the runtime retries a failed one on another node with the same call
 * id), and more are submitted through the survivors while the devices fail over (the agent's `bridge.urls`:
 * its own address again, then the next). Half of the running calls finish while their device is on no node,
 * the other half only once the new node asks about them (`aios/call.get`, then the invoke sent again, which
 * attaches to the running call); one device in ten journals `unknown` for its call, as an agent that crashed
 * mid-call does.
 *
 * Required: every device back on the survivors; every accepted call finished with its device's outcome (the
 * same state and output; `unknown` only where the device journalled it); no call run twice; no call lost.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { ERRORS } from '../../src/protocol/errors.js';
import { newCallId } from '../../src/protocol/call-id.js';
import { METHODS, type InvokeParams, type Outcome } from '../../src/protocol/messages.js';
import { echoOutcome, SimDevice } from '../../bench/sim-device.js';
import { adminPool, checkLedgers, clusterDatabase, deviceUrl, inLanes, manyDevices, startNodeProcess, stopProcess, submit, type NodeProcess, type Submitted } from '../helpers/cluster.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { procReport, tempDir, tokens } from '../helpers/stack.js';
import { slow, until } from '../helpers/wait.js';

/** How many simulated devices (default 500). */
const COUNT = Math.max(6, Number(process.env['AIOS_NODE_LOSS_DEVICES'] ?? 500) || 500);

let server: PrivatePostgres;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

/** What a call asks its device to do (its `arguments.value`). */
type Work = { kind: 'hold' | 'echo'; n: number };

/** A device's call that stays running until released: when its socket drops (`offline`), or when a node asks about it again (`attach`). */
type HoldMode = 'offline' | 'attach';

test(`SIGKILL of the owner node with ${COUNT} devices and calls in flight: every device back on the survivors, every call ends with its device's outcome, none run twice, none lost`, { timeout: slow(240_000) }, async (tc) => {
  const t = tokens();
  const dir = tempDir();
  const db = clusterDatabase(server, 'loss');
  const { tokens: deviceTokens, devices } = manyDevices(COUNT);
  const identities = devices.map((d) => d.identity);
  const nodes: NodeProcess[] = [];
  const sims: SimDevice[] = [];
  let admin: ReturnType<typeof adminPool> | undefined;
  try {
    nodes.push(...(await Promise.all(['node_a', 'node_b', 'node_c'].map((id) => startNodeProcess(dir, t, db, id, deviceTokens, 60_000)))));
    const [a, b, c] = nodes as [NodeProcess, NodeProcess, NodeProcess];
    const survivors = [b.url, c.url];
    const report = () => nodes.map((x) => procReport(x.nodeId, x.proc)).join('\n');

    // The devices: each call's gate, opened by the device's own life (its socket dropping, a node asking again).
    let killed = false;
    const gates = new Map<string, { mode: HoldMode; open: () => void }>();
    const holding = new Set<string>();
    /** Calls a node asked the device about (`aios/call.get`) after the SIGKILL. */
    const askedAgain = new Set<string>();
    const release = (id: string) => {
      const g = gates.get(id);
      if (g) {
        gates.delete(id);
        g.open();
      }
    };
    const journalsUnknown = (i: number) => i % 10 === 7;
    for (let i = 0; i < COUNT; i++) {
      const sim: SimDevice = new SimDevice({
        url: '',
        // Half fail over to B first, half to C (the agent's `bridge.urls`, in the order configured).
        urls: (i % 2 ? [a.url, c.url, b.url] : [a.url, b.url, c.url]).map(deviceUrl),
        token: devices[i]!.token,
        identity: identities[i]!,
        protocolVersion: '1.2',
        ledger: true,
        answer: async (p: InvokeParams) => {
          const w = (p.arguments as { value: Work }).value;
          const accepted = new Date();
          if (w.kind === 'hold') {
            await new Promise<void>((open) => {
              gates.set(p.call_id, { mode: i % 2 ? 'attach' : 'offline', open });
              holding.add(p.call_id);
            });
          }
          if (w.kind === 'hold' && journalsUnknown(i)) {
            // What an agent journals for a call it was running when it crashed (src/agent/journal.ts, recover).
            const now = new Date();
            return {
              call_id: p.call_id, function: p.function, state: 'unknown', replayed: false, accepted_at: accepted.toISOString(), started_at: accepted.toISOString(), finished_at: now.toISOString(), duration_ms: now.getTime() - accepted.getTime(),
              error: { code: ERRORS.execution_interrupted.code, type: 'execution_interrupted', message: 'The device client stopped while this call was running; its effect is unknown.', retryable: false, side_effects: 'possible' },
            } as Outcome;
          }
          return echoOutcome(p, accepted, accepted, new Date());
        },
        // `attach`: the call finishes once a node asks about it again (call.get, or the invoke sent again).
        onRequest: (method, params) => {
          const id = (params as { call_id?: unknown } | undefined)?.call_id;
          if (killed && typeof id === 'string' && method === METHODS.callGet) askedAgain.add(id);
          if (killed && typeof id === 'string' && (method === METHODS.callGet || method === METHODS.invoke) && gates.get(id)?.mode === 'attach') release(id);
        },
      });
      // `offline`: the call finishes as soon as the device's session drops, before it is on another node.
      sim.onclose = () => {
        if (!killed) return;
        for (const id of [...gates.keys()]) if (gates.get(id)?.mode === 'offline' && sim.executed.includes(id)) release(id);
      };
      sims.push(sim);
    }
    const backoff = { baseMs: 100, capMs: 2000, resetAfterMs: 60_000 };
    const t0 = performance.now();
    await inLanes(sims, 50, (s) => s.stayConnected(backoff));
    const store = (admin = adminPool(db));
    await until(async () => Number((await store.query(`SELECT count(*) AS n FROM device_sessions WHERE node_id = 'node_a' AND lease_until > now()`)).rows[0].n) === COUNT, 60_000, () => `every device's session on node A\n${report()}`);
    const connectMs = performance.now() - t0;

    // Calls accepted by a node (2xx): id → device index.
    const accepted = new Map<string, number>();
    /** Why the runtime had to submit again: HTTP status, or `error` (no answer: node A died under it). */
    const retries: Record<string, number> = {};
    /** Submits until a node accepts it, on `urls` in turn, with the same call id (a runtime's retry). */
    const accept = async (i: number, callId: string, work: Work, urls: string[], first?: Promise<Submitted>): Promise<void> => {
      let r: Submitted | Error | undefined = first ? await first.catch((e: Error) => e) : undefined;
      for (let k = 0; !(r && !(r instanceof Error) && r.status >= 200 && r.status < 300); k++) {
        if (r) retries[r instanceof Error ? 'error' : String(r.status)] = (retries[r instanceof Error ? 'error' : String(r.status)] ?? 0) + 1;
        if (r && !(r instanceof Error)) assert.ok([409, 503].includes(r.status), `call ${callId}: ${r.status} ${JSON.stringify(r.body)}`);
        if (k > 200) throw new Error(`call ${callId} never accepted: ${r instanceof Error ? r.message : JSON.stringify(r?.body)}`);
        r = await submit(urls[k % urls.length]!, t, { device_id: identities[i]!.device_id, function: 'diagnostics.echo', arguments: { value: work }, call_id: callId, timeout_ms: 60_000 }).catch((e: Error) => e);
      }
      accepted.set(callId, i);
    };

    // 1. A call running on every device, submitted through the survivors: node A sends each to its device.
    const held: string[] = [];
    await inLanes(identities.map((_, i) => i), 16, async (i) => {
      const id = newCallId();
      held.push(id);
      await accept(i, id, { kind: 'hold', n: i }, [survivors[i % 2]!]);
    });
    await until(() => held.every((id) => holding.has(id)), 60_000, () => `every held call running on its device (${held.filter((id) => holding.has(id)).length} of ${held.length})\n${report()}`);

    // 2. Calls being submitted to node A when it dies; then SIGKILL.
    const toA = identities.map((_, i) => i).filter((i) => i % 5 === 0).map((i) => ({ i, id: newCallId() }));
    const posts = toA.map(({ i, id }) => submit(a.url, t, { device_id: identities[i]!.device_id, function: 'diagnostics.echo', arguments: { value: { kind: 'echo', n: i } }, call_id: id, timeout_ms: 60_000 }));
    await Promise.race(posts.map((p) => p.catch(() => undefined)));
    killed = true;
    const tKill = performance.now();
    assert.equal(await a.proc.kill('SIGKILL'), null, 'node A was killed, not stopped');

    // 3. The runtime retries what node A did not answer, on the survivors, and calls every device again meanwhile.
    const after: { i: number; id: string }[] = identities.map((_, i) => ({ i, id: newCallId() }));
    await Promise.all([
      inLanes(toA.map((x, k) => ({ ...x, first: posts[k]! })), 16, ({ i, id, first }) => accept(i, id, { kind: 'echo', n: i }, survivors, first)),
      inLanes(after, 16, ({ i, id }) => accept(i, id, { kind: 'echo', n: i }, i % 2 ? [c.url, b.url] : [b.url, c.url])),
    ]);

    // Every device back on a survivor.
    await until(() => sims.every((s) => s.online && s.url !== deviceUrl(a.url)), 60_000, () => `every device back on a survivor (${sims.filter((s) => s.online && s.url !== deviceUrl(a.url)).length} of ${COUNT})\n${report()}`);
    const backMs = performance.now() - tKill;
    await until(async () => Number((await store.query(`SELECT count(*) AS n FROM device_sessions WHERE node_id IN ('node_b', 'node_c') AND lease_until > now()`)).rows[0].n) === COUNT, 30_000, 'every session claimed by a survivor');

    // Every accepted call ends.
    let open: unknown[] = [];
    await until(async () => {
      open = (await store.query(`SELECT count(*) OVER () AS open, call_id, state, sent FROM bridge_calls WHERE outcome IS NULL LIMIT 5`)).rows;
      return open.length === 0;
    }, 90_000, () => `every accepted call ended; still open: ${JSON.stringify(open)}\n${report()}`);
    const doneMs = performance.now() - tKill;

    // The records against the devices' ledgers.
    const checked = await checkLedgers(store, new Map([...accepted].map(([id, i]) => [id, sims[i]!])), sims);
    // They ended because the new node asked (not through its bus's periodic catch-up, a minute later).
    assert.deepEqual(held.filter((id) => !askedAgain.has(id)), [], 'every call running at the kill was asked about with call.get on the device\'s new node');
    assert.equal(checked.states['unknown'] ?? 0, identities.filter((_, i) => journalsUnknown(i)).length, `unknown only where the device journalled it: ${JSON.stringify(checked.states)}`);
    tc.diagnostic(`${COUNT} devices: all on node A in ${Math.round(connectMs)} ms; all back on B and C ${Math.round(backMs)} ms after the SIGKILL (B ${sims.filter((s) => s.url === deviceUrl(b.url)).length}, C ${sims.filter((s) => s.url === deviceUrl(c.url)).length}); all ${checked.calls} calls (${JSON.stringify(checked.states)}) ended ${Math.round(doneMs)} ms after it (${held.length} running at the kill, ${toA.length} being submitted to A, ${after.length} after); runtime retries ${JSON.stringify(retries)}; failed device attempts ${sims.reduce((n, s) => n + s.failedAttempts, 0)} (e.g. ${sims.find((s) => s.lastError)?.lastError?.message})`);
  } finally {
    for (const s of sims) s.close(true);
    await admin?.end().catch(() => undefined);
    await Promise.all(nodes.map((x) => stopProcess(x.proc, 'SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  }
});
