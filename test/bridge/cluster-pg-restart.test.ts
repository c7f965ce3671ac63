/**
 * PostgreSQL restarted under load (issue 34): three cluster nodes in this process on a private PostgreSQL 15,
 * simulated devices spread over them, each keeping its own at-most-once ledger (bench/sim-device.ts), and
 * runtimes submitting calls through every node without pause. PostgreSQL is stopped as a crash would stop it
 * (`down()`) while every device holds a call; the devices answer those calls while it is down (the nodes cannot
 * write the answers), then it is started again (`up()`).
 *
 * Required: while it is down, every answer is 503 `store_unavailable` with the full body and `Retry-After`,
 * never a 500, another error, or a hang; the nodes listen on the bus again by themselves and catch up (their
 * scan after the LISTEN sends the open calls to their devices again, which answer from their ledgers: the
 * periodic sweep is off, so nothing else would); every call a node accepted (2xx), before, during the
 * restart or after, ends with its device's outcome; no call runs twice.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Logger } from '../../src/base/logger.js';
import { newCallId } from '../../src/protocol/call-id.js';
import type { InvokeParams } from '../../src/protocol/messages.js';
import { echoOutcome, SimDevice } from '../../bench/sim-device.js';
import { adminPool, checkLedgers, deviceUrl, manyDevices, startCluster, STORE_UNAVAILABLE, submit, type InProcessCluster, type Submitted } from '../helpers/cluster.js';
import { startPostgres, type PrivatePostgres } from '../helpers/postgres.js';
import { tokens } from '../helpers/stack.js';
import { slow, until } from '../helpers/wait.js';

let server: PrivatePostgres;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

/** Simulated devices, over the three nodes. */
const DEVICES = 12;
/** Runtimes submitting calls one after another. */
const RUNTIMES = 4;

/** A logger that keeps the call ids of the nodes' failed call writes. */
function failedWrites(ids: Set<string>): Logger {
  const quiet: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: () => undefined,
    error: (o, msg) => {
      const id = (o as { call_id?: unknown }).call_id;
      if (msg === 'could not save a call' && typeof id === 'string') ids.add(id);
    },
    child: () => quiet,
  };
  return quiet;
}

test('PostgreSQL restarted under load: 503 store_unavailable (never a 500 or a hang) while it is down; the nodes listen again and catch up; every accepted call ends with its device\'s outcome, none run twice', { timeout: slow(180_000) }, async (tc) => {
  const t = tokens();
  const { tokens: deviceTokens, devices } = manyDevices(DEVICES);
  const unwritten = new Set<string>();
  // No periodic catch-up sweep: only the scan after each LISTEN can find what the nodes missed.
  const opts = { log: failedWrites(unwritten), bus: { backoffMs: 50, maxBackoffMs: 300, sweepMs: 0 } };
  let c: InProcessCluster | undefined;
  const sims: SimDevice[] = [];
  let db: ReturnType<typeof adminPool> | undefined;
  let loading = true;
  const runtimes: Promise<void>[] = [];
  try {
    c = await startCluster(server, 'restart', t, ['node_a', 'node_b', 'node_c'], { node_a: opts, node_b: opts, node_c: opts }, deviceTokens);
    const urls = c.urls;
    const nodeOf = (url: string) => c!.nodes[urls.indexOf(url)]!.nodeId;

    // Devices: device i on node i % 3; a `hold` call runs until its gate opens.
    const gates = new Map<string, () => void>();
    for (const [i, d] of devices.entries()) {
      const own = [0, 1, 2].map((k) => urls[(i + k) % 3]!);
      sims.push(
        new SimDevice({
          url: '',
          urls: own.map(deviceUrl),
          token: d.token,
          identity: d.identity,
          protocolVersion: '1.2',
          ledger: true,
          answer: async (p: InvokeParams) => {
            const accepted = new Date();
            if ((p.arguments as { value: { hold?: boolean } }).value.hold) await new Promise<void>((open) => gates.set(p.call_id, open));
            return echoOutcome(p, accepted, accepted, new Date());
          },
        }),
      );
    }
    await Promise.all(sims.map((s) => s.stayConnected({ baseMs: 50, capMs: 500, resetAfterMs: 60_000 })));
    db = adminPool(c.db);
    const admin = db;
    await until(async () => Number((await admin.query(`SELECT count(*) AS n FROM device_sessions WHERE lease_until > now()`)).rows[0].n) === DEVICES, 20_000, 'every device\'s session claimed');

    // The runtimes: each submits calls through the nodes in turn; a 503 is tried again with the same call id.
    type Seen = { phase: string; node: string; status: number | 'hang' | 'error'; detail?: string };
    let phase = 'before';
    const seen: Seen[] = [];
    const accepted = new Map<string, SimDevice>();
    const limitMs = slow(20_000);
    const call = async (url: string, i: number, id: string, value: Record<string, unknown>): Promise<Submitted | undefined> => {
      const body = { device_id: devices[i]!.identity.device_id, function: 'diagnostics.echo', arguments: { value }, call_id: id, timeout_ms: 60_000 };
      const started = performance.now();
      let r: Submitted;
      try {
        r = await submit(url, t, body, AbortSignal.timeout(limitMs));
      } catch (e) {
        const hang = performance.now() - started >= limitMs - 50;
        seen.push({ phase, node: nodeOf(url), status: hang ? 'hang' : 'error', detail: String(e) });
        return undefined;
      }
      if (r.status >= 200 && r.status < 300) accepted.set(id, sims[i]!);
      // A 503 is store_unavailable with its whole body and Retry-After, or it counts as a wrong answer.
      const exact = r.status !== 503 || (JSON.stringify(r.body) === JSON.stringify({ error: STORE_UNAVAILABLE }) && r.retryAfter === '5');
      seen.push({ phase, node: nodeOf(url), status: exact ? r.status : 'error', ...(r.status >= 300 ? { detail: `${r.status} Retry-After ${r.retryAfter} ${JSON.stringify(r.body)}` } : {}) });
      return r;
    };
    let next = 0;
    for (let w = 0; w < RUNTIMES; w++) {
      runtimes.push(
        (async () => {
          while (loading) {
            const k = next++;
            const i = k % DEVICES;
            const id = newCallId();
            // Until a node accepts it (or the load stops): the runtime's retry after a 503, on the next node.
            for (let attempt = 0; loading; attempt++) {
              const r = await call(urls[(k + attempt) % 3]!, i, id, { n: k });
              if (r && r.status < 300) break;
              // Pacing, not a wait for a condition: Retry-After scaled down, so the outage sees many attempts.
              await new Promise((res) => setTimeout(res, 50));
            }
          }
        })(),
      );
    }
    const acceptedBy = (node: string, p: string) => seen.filter((s) => s.node === node && s.phase === p && typeof s.status === 'number' && s.status < 300).length;
    await until(() => c!.nodes.every((n) => acceptedBy(n.nodeId, 'before') >= 5), 30_000, 'calls flowing through every node');

    // Every device holds a call, sent through another node than its own.
    const held = devices.map(() => newCallId());
    for (const [i, id] of held.entries()) {
      const r = await call(urls[(i + 1) % 3]!, i, id, { hold: true });
      assert.equal(r?.status, 202, JSON.stringify(r?.body));
    }
    await until(() => held.every((id) => gates.has(id)), 20_000, 'every held call running on its device');

    // Down. The answers the devices give now cannot be written.
    phase = 'down';
    const tDown = performance.now();
    server.down();
    for (const url of urls) {
      const r = await call(url, 0, newCallId(), { probe: true });
      assert.equal(r?.status, 503, `${nodeOf(url)} while PostgreSQL is down: ${JSON.stringify(r?.body)}`);
    }
    await until(async () => {
      const states = await Promise.all(urls.map(async (u) => ((await (await fetch(`${u}/health`)).json()) as { bus: string }).bus));
      return states.every((s) => s === 'reconnecting');
    }, 20_000, 'every node\'s bus reconnecting');
    for (const id of held) gates.get(id)!();
    await until(() => held.every((id) => unwritten.has(id)), 20_000, () => `the nodes failing to write the held calls' answers (${held.filter((id) => unwritten.has(id)).length} of ${held.length})`);
    await until(() => c!.nodes.every((n) => seen.some((s) => s.node === n.nodeId && s.phase === 'down' && s.status === 503)), 20_000, 'the runtimes refused by every node');

    // Up again: the same nodes, never restarted.
    server.up();
    phase = 'after';
    const tUp = performance.now();
    await until(async () => {
      const states = await Promise.all(urls.map(async (u) => ((await (await fetch(`${u}/health`)).json()) as { bus?: string }).bus));
      return states.every((s) => s === 'listening');
    }, 30_000, 'every node\'s bus listening again');
    const relistenMs = performance.now() - tUp;
    await until(() => c!.nodes.every((n) => acceptedBy(n.nodeId, 'after') >= 5), 30_000, 'calls flowing again through every node');
    loading = false;
    await Promise.all(runtimes);

    // Every accepted call ends, the held ones through the catch-up scan.
    let open: unknown[] = [];
    await until(async () => {
      open = (await admin.query(`SELECT count(*) OVER () AS open, call_id, state, sent FROM bridge_calls WHERE outcome IS NULL LIMIT 5`)).rows;
      return open.length === 0;
    }, 30_000, () => `every accepted call ended; still open: ${JSON.stringify(open)}`);
    const doneMs = performance.now() - tUp;
    const bad = seen.filter((s) => s.status !== 503 && !(typeof s.status === 'number' && s.status < 300));
    assert.deepEqual(bad, [], 'only 2xx and 503 store_unavailable, never a 500, another error or a hang');
    assert.ok(seen.filter((s) => s.phase === 'down' && s.status === 503).length >= 3);
    const checked = await checkLedgers(admin, accepted, sims);
    assert.deepEqual(Object.keys(checked.states), ['completed'], JSON.stringify(checked.states));
    for (const id of held) assert.ok(accepted.has(id));
    assert.ok(sims.every((s) => s.reconnects === 0), 'the devices kept their WebSockets');
    const count = (p: string, st: (s: Seen) => boolean) => seen.filter((s) => s.phase === p && st(s)).length;
    tc.diagnostic(
      `down ${Math.round(tUp - tDown)} ms; buses listening ${Math.round(relistenMs)} ms after up, every call ended ${Math.round(doneMs)} ms after up; ` +
        `answers before/down/after: 2xx ${count('before', (s) => s.status !== 503)}/${count('down', (s) => s.status !== 503)}/${count('after', (s) => s.status !== 503)}, ` +
        `503 ${count('before', (s) => s.status === 503)}/${count('down', (s) => s.status === 503)}/${count('after', (s) => s.status === 503)}; ${checked.calls} calls checked`,
    );
  } finally {
    loading = false;
    await Promise.all(runtimes).catch(() => undefined);
    for (const s of sims) s.close(true);
    await db?.end().catch(() => undefined);
    await c?.stop();
  }
});
