/**
 * The protocol floor: what PROTOCOL.md's wire and journal duties cost with nothing else. The driver
 * plays the bridge (a `ws` server that parses every frame), a child plays the agent (a `ws` client, so
 * its frames are masked as the agent's are) and, per invoke: parses it, appends an accept line to a log
 * file, sends `call_state` accepted and running, appends an outcome line, sends `call_state` completed
 * and the response (outcome padded to the agent's real size). Log writes are grouped per event-loop
 * turn and frames corked per turn, as the agent does. No validation, digest, dedup lookup, consent,
 * audit, locks, timers, logging or metrics: the gap between this and the agent is the implementation's,
 * the gap between this and MCP is the protocol's.
 *
 * Three variants: `1.0` (four frames per call: the three `call_state` notes and the response, as
 * PROTOCOL.md 1.0 asked), `1.1` (1.1's duties for a call that ends inside the 10 ms window, §6.2: the
 * invoke and the response, two frames; still two durable log writes) and `checks` (1.1 plus the checks
 * §4–§6 ask of every call, each done the cheapest way: identity, function known, `call_id` syntax and
 * UUIDv7 age, arguments against the input schema, `args_digest` and the dedup lookup, a deadline, the
 * output against the output schema; `diagnostics.echo`'s schemas from its handler, ajv built as the agent builds it). The
 * gap between `checks` and the agent is what the agent does that the spec does not ask of a call.
 * Child mode: node bench/protocol-floor.js --agent <port> <responseBytes> <logFile> <1.0|1.1|checks>
 */
import { openSync, rmSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';
import { invokeParams } from './agent-roundtrip.js';
import { announceReady, exitOnSignal, isMain, startChild } from './child.js';
import type { BenchTarget } from './stats.js';
import { idCaller } from './ws-echo.js';
import { argsDigest } from '../src/protocol/hash.js';
import { uuidv7Time } from '../src/protocol/outcomes.js';
import { makeAjv } from '../src/protocol/schema-validator.js';
import { BENCH_IDS } from './device-stack.js';
import diagnostics from '../handlers/diagnostics/index.js';
import type { HandlerEnv } from '../src/sdk/index.js';

/** Which protocol's duties the floor does. */
export type FloorVariant = '1.0' | '1.1' | 'checks';

/** `diagnostics.echo`'s schemas, from the handler itself (the call every floor and the agent answer). */
async function echoSchemas(): Promise<{ input: object; output: object }> {
  const created = await diagnostics.create({} as HandlerEnv);
  const fns = 'functions' in created ? created.functions : created;
  const echo = fns.find((f) => f.descriptor.id === 'diagnostics.echo');
  if (!echo) throw new Error('the diagnostics handler has no diagnostics.echo');
  return { input: echo.descriptor.input_schema, output: echo.descriptor.output_schema };
}

/** The invoke's fields the checks read. */
interface Checked {
  call_id: string;
  function: string;
  arguments: unknown;
  workspace_id?: string;
  device_id?: string;
}

/**
 * The per-call checks of PROTOCOL.md §4–§6.1 in their order, at their cheapest: `check` throws the error
 * type a call is refused with (the floor's benchmark sends none), `finish` ends the call. Rows (digest, then
 * outcome) are kept in a map, as a journal keeps them for replays; the floor's log is its durable copy.
 */
async function floorChecks(): Promise<{ check(p: Checked): void; finish(callId: string, outcome: string): void }> {
  const ajv = makeAjv('2020-12');
  const schemas = await echoSchemas();
  const input = ajv.compile(schemas.input);
  const output = ajv.compile(schemas.output);
  const idPattern = /^[A-Za-z0-9._:-]{1,128}$/;
  const retentionMs = 86_400_000;
  const rows = new Map<string, { digest: string; outcome?: string }>();
  const deadlines = new Set<string>();
  const refuse = (type: string): never => {
    throw new Error(`the floor refused a call: ${type}`);
  };
  const check = (p: Checked): void => {
    if (p.workspace_id !== BENCH_IDS.workspace_id || p.device_id !== BENCH_IDS.device_id) refuse('identity_mismatch');
    if (p.function !== 'diagnostics.echo') refuse('unknown_function');
    if (!idPattern.test(p.call_id)) refuse('invalid_arguments');
    const t = uuidv7Time(p.call_id);
    if (t !== undefined && t < Date.now() - retentionMs) refuse('call_expired');
    if (!input(p.arguments)) refuse('invalid_arguments');
    const digest = argsDigest(p.function, p.arguments);
    const known = rows.get(p.call_id);
    if (known) refuse(known.digest === digest ? 'replay' : 'idempotency_conflict');
    rows.set(p.call_id, { digest });
    // One deadline per call, kept in a set a shared timer would sweep (the agent's wheel does the same).
    deadlines.add(p.call_id);
    // The echo's output is its arguments: checked against the output schema as the agent checks a handler's.
    if (!output(p.arguments)) refuse('bad_output');
  };
  const finish = (callId: string, outcome: string) => {
    deadlines.delete(callId);
    const row = rows.get(callId);
    if (row) row.outcome = outcome;
    if (rows.size > 65_536) rows.clear();
  };
  return { check, finish };
}

async function agent(port: number, responseBytes: number, logFile: string, variant: FloorVariant): Promise<void> {
  const checks = variant === 'checks' ? await floorChecks() : undefined;
  const ws = new WebSocket(`ws://127.0.0.1:${port}`);
  const fd = openSync(logFile, 'w', 0o600);
  let lines: string[] = [];
  let waiting: (() => void)[] = [];
  const log = (line: string) =>
    new Promise<void>((resolve) => {
      lines.push(line);
      waiting.push(resolve);
      if (lines.length > 1) return;
      setImmediate(() => {
        const ls = lines;
        const ws2 = waiting;
        lines = [];
        waiting = [];
        writeSync(fd, ls.join('\n') + '\n');
        for (const r of ws2) r();
      });
    });
  const socket = () => (ws as unknown as { _socket: { cork(): void; uncork(): void } })._socket;
  let corked = false;
  let pad: string | undefined;
  const send = (text: string) => {
    if (!corked) {
      corked = true;
      socket().cork();
      setImmediate(() => {
        corked = false;
        socket().uncork();
      });
    }
    ws.send(text);
  };
  const note = (callId: string, state: string, seq: number) =>
    // 1.1: a call that ends inside the coalescing window sends no note.
    variant === '1.0' &&
    send(JSON.stringify({ jsonrpc: '2.0', method: 'aios/notification.call_state', params: { call_id: callId, state, seq, at: new Date().toISOString() } }));
  ws.on('message', (data) => {
    void (async () => {
      const m = JSON.parse(String(data)) as { id: number; params: Checked };
      const { call_id: id, function: fn } = m.params;
      checks?.check(m.params);
      const acceptedAt = new Date().toISOString();
      await log(JSON.stringify(['a', id, fn, acceptedAt]));
      note(id, 'accepted', 0);
      note(id, 'running', 1);
      const outcome = { call_id: id, function: fn, state: 'completed', output: m.params.arguments, output_valid: true, error: null, replayed: false, accepted_at: acceptedAt, started_at: acceptedAt, finished_at: new Date().toISOString(), duration_ms: 0, pad: '' };
      // The padding is sized once, on the first call (the later ones differ by a digit or two of the id).
      pad ??= 'x'.repeat(Math.max(0, responseBytes - JSON.stringify({ jsonrpc: '2.0', id: m.id, result: outcome }).length));
      outcome.pad = pad;
      const json = JSON.stringify(outcome);
      checks?.finish(id, json);
      await log(`["f",${JSON.stringify(id)},${json}]`);
      note(id, 'completed', 2);
      send(`{"jsonrpc":"2.0","id":${m.id},"result":${json}}`);
    })();
  });
  ws.on('open', () => announceReady({}));
  exitOnSignal(() => {
    closeSync(fd);
    ws.close();
    return Promise.resolve();
  });
}

const FLOOR_NAMES: Record<FloorVariant, string> = {
  '1.1': 'protocol floor 1.1 (2 frames + 2 log writes)',
  '1.0': 'protocol floor 1.0 (4 frames + 2 log writes)',
  checks: 'protocol floor 1.1 + the spec\'s per-call checks',
};

/** Opens the floor target (1.1 unless told) with the agent's real response size; `child`: node flags and environment for its process. */
export async function openProtocolFloor(frames: { response: number }, variant: FloorVariant = '1.1', child: { nodeArgs?: string[]; env?: Record<string, string> } = {}): Promise<BenchTarget> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const connected = new Promise<WebSocket>((r) => wss.once('connection', r));
  const logFile = join(tmpdir(), `aios-bench-floor-${variant}-${process.pid}.log`);
  const proc = await startChild(fileURLToPath(import.meta.url), ['--agent', String((wss.address() as AddressInfo).port), String(frames.response), logFile, variant], child.nodeArgs, child.env);
  const ws = await connected;
  return {
    name: FLOOR_NAMES[variant],
    call: idCaller(ws, (id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'aios/function.invoke', params: invokeParams() })),
    async close() {
      await proc.stop();
      await new Promise<void>((r) => wss.close(() => r()));
      rmSync(logFile, { force: true });
    },
  };
}

if (isMain(import.meta.url) && process.argv[2] === '--agent') void agent(Number(process.argv[3]), Number(process.argv[4]), process.argv[5]!, process.argv[6] === '1.0' || process.argv[6] === 'checks' ? process.argv[6] : '1.1');
