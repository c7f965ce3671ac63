/**
 * Protocol version negotiation on the wire (PROTOCOL.md §3.1, §6.2, "Changes" 1.1), with a real agent
 * (`startAgent`: journal, consent, the diagnostics handler) over a real WebSocket. The bridge side is a
 * stand-in that answers hello with the version under test, because this checkout's reference bridge
 * answers 1.0 (its 1.1 is built separately); what the reference bridge does with a 1.1 offer is covered by
 * the other integration tests, which run against it. Only orderings are asserted, never durations: a fast
 * call may still outlive the 10 ms window on a busy machine (the unit test drives the window by clock).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { JsonRpcPeer } from '../../src/protocol/peer.js';
import { WebSocketTransport } from '../../src/protocol/ws-transport.js';
import { METHODS, SUBPROTOCOL, isTerminal, type CallStateNote, type HelloParams, type Outcome } from '../../src/protocol/messages.js';
import { normalizeAgentConfig } from '../../src/config/agent-config.js';
import { startAgent } from '../../src/app/start-agent.js';
import { silentLogger } from '../../src/base/logger.js';
import { agentDoc, ids, tempDir, tokens, until } from '../helpers/stack.js';

/** One frame the stand-in bridge received, in order: a state note or an invoke's response. */
type Seen = { note: CallStateNote } | { response: Outcome };

async function stack(answer: '1.0' | '1.1') {
  const dir = tempDir();
  const t = tokens();
  const hellos: HelloParams[] = [];
  const seen: Seen[] = [];
  let peer: JsonRpcPeer | undefined;
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: () => SUBPROTOCOL });
  await once(wss, 'listening');
  wss.on('connection', (ws) => {
    const p = new JsonRpcPeer(new WebSocketTransport(ws));
    p.onRequest(METHODS.hello, (params) => {
      hellos.push(params as HelloParams);
      peer = p;
      return { session_id: 'ses_wire', protocol_version: answer, server_time: new Date().toISOString(), heartbeat_ms: 20_000, lease_ms: 300_000, min_client_version: '0.0.0' };
    });
    p.onRequest(METHODS.callReport, (params) => ({ accepted: (params as { outcomes: Outcome[] }).outcomes.map((o) => o.call_id) }));
    p.onNotification(METHODS.callState, (params) => void seen.push({ note: params as CallStateNote }));
  });
  const url = `http://127.0.0.1:${(wss.address() as AddressInfo).port}`;
  const running = await startAgent(normalizeAgentConfig(agentDoc(dir, url, t)), silentLogger(), { backoff: { baseMs: 20, capMs: 200, resetAfterMs: 60_000 } });
  await until(() => peer !== undefined && running.agent.session?.isConnected, 10_000, 'the agent connected');
  let n = 0;
  const invoke = async (fn: string, args: Record<string, unknown>) => {
    const call_id = `wire-${answer}-${++n}`;
    const o = await peer!.request<Outcome>(METHODS.invoke, { call_id, function: fn, arguments: args, ...ids, timeout_ms: 30_000 }, 30_000);
    seen.push({ response: o });
    return call_id;
  };
  /** The frames of one call, as `state#seq` for notes and `response:state` for the response. */
  const frames = (callId: string) =>
    seen.flatMap((s) => ('note' in s ? (s.note.call_id === callId ? [`${s.note.state}#${s.note.seq}`] : []) : s.response.call_id === callId ? [`response:${s.response.state}`] : []));
  return {
    hellos, invoke, frames, running,
    stop: async () => {
      await running.stop().catch(() => undefined);
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((r) => wss.close(() => r()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('the agent offers 1.2; a bridge that answers 1.0 gets a note for every transition, the terminal one included', async () => {
  const s = await stack('1.0');
  try {
    assert.equal(s.hellos[0]?.protocol_version, '1.2', 'hello offers 1.2');
    assert.equal(s.running.agent.session?.coalescesNotes, false);
    const id = await s.invoke('diagnostics.echo', { value: 'x' });
    assert.deepEqual(s.frames(id), ['accepted#0', 'running#1', 'completed#2', 'response:completed']);
  } finally {
    await s.stop();
  }
});

test('with a bridge that answers 1.1 no terminal note is sent, and a call that lasts sends its running note before its response', async () => {
  const s = await stack('1.1');
  try {
    assert.equal(s.hellos[0]?.protocol_version, '1.2', 'hello offers 1.2');
    assert.equal(s.running.agent.session?.coalescesNotes, true);
    const fast = await s.invoke('diagnostics.echo', { value: 'x' });
    const f = s.frames(fast);
    assert.equal(f.at(-1), 'response:completed');
    // Usually the response alone; on a busy machine the call may outlive the window and report `running`.
    for (const x of f.slice(0, -1)) assert.match(x, /^(accepted|running)#\d+$/, `only non-terminal notes: ${f.join(', ')}`);
    const slow = await s.invoke('diagnostics.wait', { ms: 300 });
    const w = s.frames(slow);
    assert.equal(w.at(-1), 'response:completed');
    assert.ok(w.includes('running#0') || w.includes('running#1'), `the running note went out while the call ran: ${w.join(', ')}`);
    assert.ok(!w.some((x) => /#/.test(x) && isTerminal(x.split('#')[0]!)), 'no terminal note');
    const seqs = w.filter((x) => x.includes('#')).map((x) => Number(x.split('#')[1]));
    assert.deepEqual(seqs, seqs.map((_, i) => i), 'seq counts the notes sent, from 0');
  } finally {
    await s.stop();
  }
});
