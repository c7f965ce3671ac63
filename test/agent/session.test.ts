/**
 * The device session's reconnect logic (PROTOCOL.md §1, §3.1): backoff with full jitter, reset after a
 * session stays up (not tested here: timing-only), reconnect at once after a clock jump (sleep/resume), and the fatal stops (replaced,
 * client_outdated) that must not retry. The bridge is a real WebSocket server on port 0 that speaks just
 * enough of the protocol; the dispatcher and journal are not reached except for an empty outbox.
 */
import { test, mock } from 'node:test';
import { until } from '../helpers/wait.js';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { DeviceSession, backoffDelay, DEFAULT_BACKOFF, type BridgeStatus, type FatalStop, type SessionOptions } from '../../src/agent/session.js';
import { JsonRpcPeer } from '../../src/protocol/peer.js';
import { WebSocketTransport, CLOSE } from '../../src/protocol/ws-transport.js';
import { METHODS, SUBPROTOCOL } from '../../src/protocol/messages.js';
import { WireError } from '../../src/protocol/errors.js';
import { silentLogger } from '../../src/base/logger.js';
import { Outbox } from '../../src/agent/outbox.js';

test('backoff: the ceiling doubles from 0.5 s up to the 30 s cap, and the jitter spans [0, ceiling)', () => {
  const top = () => 1 - Number.EPSILON;
  const ceilings = Array.from({ length: 9 }, (_, n) => Math.round(backoffDelay(n, DEFAULT_BACKOFF, top)));
  assert.deepEqual(ceilings, [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  assert.equal(backoffDelay(3, DEFAULT_BACKOFF, () => 0), 0, 'full jitter reaches 0');
  const samples = Array.from({ length: 2000 }, () => backoffDelay(4, DEFAULT_BACKOFF));
  assert.ok(samples.every((d) => d >= 0 && d < 8000), 'never at or over the ceiling');
  // Full jitter, not "ceiling ± a little": both halves of the range are used.
  assert.ok(samples.some((d) => d < 2000) && samples.some((d) => d > 6000));
});

/** A bridge stand-in: counts connection attempts and lets each test decide what a connection does. */
async function fakeBridge(onConnection: (ws: WebSocket, peer: JsonRpcPeer, n: number) => void, opts: { refuse?: boolean } = {}) {
  const attempts: number[] = [];
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    handleProtocols: () => SUBPROTOCOL,
    verifyClient: (_info, cb) => {
      attempts.push(performance.now());
      if (opts.refuse) cb(false, 503, 'try later');
      else cb(true);
    },
  });
  await once(wss, 'listening');
  wss.on('connection', (ws) => onConnection(ws, new JsonRpcPeer(new WebSocketTransport(ws)), attempts.length));
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v1/device`;
  return { url, attempts, close: () => new Promise<void>((r) => { for (const c of wss.clients) c.terminate(); wss.close(() => r()); }) };
}

/** Polls a condition (an event source the test does not own), failing after a generous minute. */
const helloResult = { session_id: 'ses_1', protocol_version: '1.0', server_time: new Date().toISOString(), heartbeat_ms: 20_000, lease_ms: 300_000, min_client_version: '0.0.0' };

function session(url: string, extra: Partial<SessionOptions> = {}) {
  const statuses: BridgeStatus[] = [];
  const fatals: FatalStop[] = [];
  const s = new DeviceSession({
    urls: [url],
    token: async () => 'tok',
    hello: () => ({ protocol_version: '1.0', client: { name: 'aios-device', version: '0.1.0', platform: 'linux', arch: 'x64' }, device: { id: 'dev_1', name: 'test' }, workspace_id: 'ws_1', user_id: 'usr_1', functions_revision: 1, limits: { max_message_bytes: 1 << 20, max_concurrent_calls: 8, dedupe_retention_s: 86400 } }) as never,
    dispatcher: {} as never,
    outbox: new Outbox({ store: { outbox: () => [] } as never, log: silentLogger() }),
    log: silentLogger(),
    maxMessageBytes: 1 << 20,
    methods: {},
    onStatus: (st) => statuses.push(st),
    onFatal: (f) => fatals.push(f),
    ...extra,
  });
  return { s, statuses, fatals };
}

test('reconnect attempts wait at least their backoff ceiling (jitter pinned to the top), doubling', async (t) => {
  const bridge = await fakeBridge(() => undefined, { refuse: true });
  const backoff = { baseMs: 40, capMs: 160, resetAfterMs: 60_000 };
  const { s } = session(bridge.url, { backoff, random: () => 1 });
  t.after(() => { s.stop(); return bridge.close(); });
  s.start();
  await until(() => bridge.attempts.length >= 5, 20_000, 'five connection attempts');
  s.stop();
  const gaps = bridge.attempts.slice(1).map((at, i) => at - bridge.attempts[i]!);
  // Timers never fire early, so each gap is at least its ceiling however busy the machine is.
  [40, 80, 160, 160].forEach((ceiling, i) => assert.ok(gaps[i]! >= ceiling - 1, `gap ${i} was ${gaps[i]} ms, under its ${ceiling} ms ceiling`));
});

test('a clock jump (sleep/resume) reconnects at once instead of waiting out the backoff', (t) => {
  mock.timers.enable({ apis: ['setInterval', 'Date'] });
  t.after(() => mock.timers.reset());
  const { s } = session('ws://127.0.0.1:9/never');
  let now = 0;
  s.reconnectNow = () => void now++;
  // Start the watch alone: start() would also connect.
  (s as unknown as { stopped: boolean }).stopped = false;
  (s as unknown as { watchForSleep(): void }).watchForSleep();
  try {
    mock.timers.tick(5000);
    mock.timers.tick(5000);
    assert.equal(now, 0, 'a timer on time is not a sleep');
    mock.timers.setTime(Date.now() + 60_000); // the machine slept for a minute
    mock.timers.tick(5000);
    assert.ok(now >= 1, 'reconnected at once after the jump');
  } finally {
    s.stop();
  }
});

test('a replaced session (close 4001) stops for good: no retry, status offline, the reason kept', async (t) => {
  const bridge = await fakeBridge((ws, peer) => {
    peer.onRequest(METHODS.hello, () => {
      setImmediate(() => ws.close(CLOSE.replaced, 'replaced'));
      return helloResult;
    });
  });
  const { s, statuses, fatals } = session(bridge.url, { backoff: { baseMs: 1, capMs: 1, resetAfterMs: 60_000 } });
  t.after(() => { s.stop(); return bridge.close(); });
  s.start();
  await until(() => fatals.length > 0, 20_000, 'the fatal stop');
  assert.equal(fatals[0]!.type, 'replaced');
  assert.equal(s.status, 'offline');
  // A retry would have set 'connecting' synchronously in the close handler, before the fatal stop.
  assert.deepEqual(statuses, ['connecting', 'connected', 'offline']);
  assert.equal(bridge.attempts.length, 1);
});

test('client_outdated in hello stops for good with the minimum version', async (t) => {
  const bridge = await fakeBridge((_ws, peer) => {
    peer.onRequest(METHODS.hello, () => {
      throw new WireError('client_outdated', 'too old', { details: { min_client_version: '9.0.0' } });
    });
  });
  const { s, statuses, fatals } = session(bridge.url, { backoff: { baseMs: 1, capMs: 1, resetAfterMs: 60_000 } });
  t.after(() => { s.stop(); return bridge.close(); });
  s.start();
  await until(() => fatals.length > 0, 20_000, 'the fatal stop');
  assert.equal(fatals[0]!.type, 'client_outdated');
  assert.equal(fatals[0]!.details?.['min_client_version'], '9.0.0');
  assert.match(fatals[0]!.message, /this is \S+; the bridge needs 9\.0\.0 or newer/, 'the message names both versions');
  assert.equal(statuses.at(-1), 'offline');
  assert.ok(!statuses.slice(statuses.indexOf('offline')).includes('connecting'), 'no retry after the fatal stop');
});

test('bridge.urls: a failed attempt dials the next address; a session that was up and dropped is retried on its own address first', async (t) => {
  const { freePort } = await import('../helpers/net.js');
  const closed = `ws://127.0.0.1:${await freePort()}/v1/device`; // nothing listens: connection refused
  const refusing = await fakeBridge(() => undefined, { refuse: true }); // answers HTTP 503
  let drops = 0;
  const live = await fakeBridge((ws, peer) => {
    peer.onRequest(METHODS.hello, () => {
      // The first session drops right after it is up (a node restarting); the second stays.
      if (drops++ === 0) setImmediate(() => ws.close(1011, 'node restarting'));
      return helloResult;
    });
  });
  const { s, statuses } = session(closed, { urls: [closed, refusing.url, live.url], backoff: { baseMs: 1, capMs: 5, resetAfterMs: 60_000 } });
  t.after(async () => { s.stop(); await refusing.close(); await live.close(); });
  assert.equal(s.url, closed, 'the first attempt dials the first address');
  s.start();
  await until(() => live.attempts.length >= 2 && s.status === 'connected', 20_000, 'the second session on the live address');
  assert.equal(refusing.attempts.length, 1, 'the refusing address was tried once, in order, and not again after the drop');
  assert.equal(s.url, live.url);
  assert.equal(statuses.filter((x) => x === 'connected').length, 2);
});

test('bridge.urls: every address failing cycles through them in order, each attempt after its backoff', async (t) => {
  const a = await fakeBridge(() => undefined, { refuse: true });
  const b = await fakeBridge(() => undefined, { refuse: true });
  const { s } = session(a.url, { urls: [a.url, b.url], backoff: { baseMs: 1, capMs: 5, resetAfterMs: 60_000 } });
  t.after(async () => { s.stop(); await a.close(); await b.close(); });
  s.start();
  await until(() => a.attempts.length >= 3 && b.attempts.length >= 3, 20_000, 'three rounds over both addresses');
  s.stop();
  // Strictly alternating: a, b, a, b, a, b (each attempt's time is taken when the bridge sees it).
  const order = [...a.attempts.map((at) => ({ at, who: 'a' })), ...b.attempts.map((at) => ({ at, who: 'b' }))].sort((x, y) => x.at - y.at).map((x) => x.who);
  assert.deepEqual(order.slice(0, 6), ['a', 'b', 'a', 'b', 'a', 'b']);
});

test('a session needs at least one bridge address', () => {
  assert.throws(() => session('ws://x', { urls: [] }), /at least one bridge URL/);
});

test('a session closed for going past the bridge\'s bounds (4008) waits the longest backoff before the next attempt, and says which bound', async (t) => {
  const bridge = await fakeBridge((ws, peer) => {
    peer.onRequest(METHODS.hello, () => {
      setImmediate(() => ws.close(CLOSE.limits, JSON.stringify({ type: 'device_limits_exceeded', code: -41063, details: { bound: 'max_functions' } })));
      return helloResult;
    });
  });
  const errors: { o: unknown; msg: string | undefined }[] = [];
  const quiet = silentLogger();
  const log = { ...quiet, error: (o: unknown, msg?: string) => void errors.push({ o, msg }), child: () => quiet } as typeof quiet;
  // Backoff ceilings of 1 ms, except the longest: a retry after 4008 waits at least 300 ms, any other ≈ 1 ms.
  const { s } = session(bridge.url, { log, backoff: { baseMs: 1, capMs: 300, resetAfterMs: 60_000 }, random: () => 1 - Number.EPSILON });
  t.after(() => { s.stop(); return bridge.close(); });
  s.start();
  await until(() => bridge.attempts.length >= 2, 20_000, 'the second attempt');
  s.stop();
  const gap = bridge.attempts[1]! - bridge.attempts[0]!;
  assert.ok(gap >= 299, `the second attempt came ${gap} ms after the first: not after the longest backoff`);
  assert.equal((errors[0]?.o as { bound?: unknown } | undefined)?.bound, 'max_functions', JSON.stringify(errors));
});
