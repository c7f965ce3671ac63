/**
 * The full path a runtime sees: HTTP `POST /v1/calls` with `wait: true` to the reference bridge (its own
 * process, its SQLite call store), over the device WebSocket to the agent (its own process, its journal),
 * and back. Keep-alive HTTP connections, one per call in flight.
 */
import { runtimeCaller, startDeviceStack, type AgentSettings } from './device-stack.js';
import { ECHO_VALUE } from './agent-roundtrip.js';
import type { BenchTarget } from './stats.js';

/** Opens the full-path target: a bridge and an agent, each in its own process; `concurrency` keep-alive sockets. */
export async function openFullPath(settings: AgentSettings, concurrency: number): Promise<BenchTarget> {
  const stack = await startDeviceStack(settings, 'child');
  const caller = runtimeCaller(stack, concurrency, 'diagnostics.echo', { value: ECHO_VALUE }, (o) => (o as { value?: unknown } | undefined)?.value === ECHO_VALUE);
  return {
    name: `full path (HTTP → bridge → agent, journal ${settings.synchronous.toUpperCase()})`,
    call: caller.call,
    async close() {
      caller.close();
      await stack.stop();
    },
  };
}
