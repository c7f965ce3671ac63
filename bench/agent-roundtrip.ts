/**
 * A no-op call through the agent: the driver plays the bridge (the real `BridgeServer`, in this process)
 * and sends `aios/function.invoke` for `diagnostics.echo` with a fresh call_id each time over the real
 * device WebSocket to a real agent in a child process, journal on. Measures what a runtime-side bridge
 * sees: from sending the invoke to receiving its outcome.
 */
import { newCallId } from '../src/protocol/call-id.js';
import { METHODS, type InvokeParams, type Outcome } from '../src/protocol/messages.js';
import { BENCH_IDS, startDeviceStack, type AgentSettings } from './device-stack.js';
import type { BenchTarget } from './stats.js';

/** The argument every no-op benchmark sends (and gets back). */
export const ECHO_VALUE = 'hello from the benchmark';

/** The call a round-trip target makes: a function, its arguments, and what its output must be. */
export interface RoundtripCall {
  function: string;
  arguments: Record<string, unknown>;
  ok(output: unknown): boolean;
}

/** The no-op every round-trip benchmark sends unless told otherwise. */
export const ECHO_CALL: RoundtripCall = { function: 'diagnostics.echo', arguments: { value: ECHO_VALUE }, ok: (o) => (o as { value?: unknown } | undefined)?.value === ECHO_VALUE };

/** `device.info`: the call issue 32's allocation target is stated for. */
export const DEVICE_INFO_CALL: RoundtripCall = { function: 'device.info', arguments: {}, ok: (o) => typeof (o as { hostname?: unknown } | undefined)?.hostname === 'string' };

/** Invoke params for one fresh call (default: the no-op). */
export function invokeParams(c: RoundtripCall = ECHO_CALL): InvokeParams {
  return {
    call_id: newCallId(),
    function: c.function,
    arguments: c.arguments,
    ...BENCH_IDS,
    timeout_ms: 30_000,
    attempt: 1,
  };
}

/** Opens the agent round-trip target; also reports the invoke's request and response frame sizes. */
export async function openAgentRoundtrip(settings: AgentSettings, c: RoundtripCall = ECHO_CALL): Promise<BenchTarget & { frames: { request: number; response: number } }> {
  const stack = await startDeviceStack(settings, 'here');
  try {
    const conn = stack.bridge!.hub.get(BENCH_IDS.device_id);
    if (!conn) throw new Error('the agent is not connected');
    const call = async (): Promise<Outcome> => {
      const o = await conn.peer.request<Outcome>(METHODS.invoke, invokeParams(c), 30_000);
      if (o.state !== 'completed' || !c.ok(o.output)) {
        throw new Error(`${c.function} did not complete: ${o.state} ${o.error?.type ?? ''}`);
      }
      return o;
    };
    const sample = await call();
    const frames = {
      request: Buffer.byteLength(JSON.stringify({ jsonrpc: '2.0', id: 100_000, method: METHODS.invoke, params: invokeParams(c) })),
      response: Buffer.byteLength(JSON.stringify({ jsonrpc: '2.0', id: 100_000, result: sample })),
    };
    return {
      name: `agent (journal ${settings.synchronous.toUpperCase()}, log ${settings.log})`,
      call,
      close: () => stack.stop(),
      frames,
      notes: { request_bytes: frames.request, response_bytes: frames.response },
    };
  } catch (e) {
    await stack.stop();
    throw e;
  }
}
