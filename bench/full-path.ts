/**
 * The full path a runtime sees: HTTP `POST /v1/calls` with `wait: true` to the reference bridge (its own
 * process, its SQLite call store), over the device WebSocket to the agent (its own process, its journal),
 * and back. Keep-alive HTTP connections, one per call in flight.
 */
import http from 'node:http';
import { BENCH_IDS, startDeviceStack, type AgentSettings } from './device-stack.js';
import { ECHO_VALUE } from './agent-roundtrip.js';
import type { BenchTarget } from './stats.js';

/** Opens the full-path target: a bridge and an agent, each in its own process; `concurrency` keep-alive sockets. */
export async function openFullPath(settings: AgentSettings, concurrency: number): Promise<BenchTarget> {
  const stack = await startDeviceStack(settings, 'child');
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const url = new URL('/v1/calls', stack.url);
  const body = JSON.stringify({ workspace_id: BENCH_IDS.workspace_id, device_id: BENCH_IDS.device_id, function: 'diagnostics.echo', arguments: { value: ECHO_VALUE }, wait: true });
  const headers = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), authorization: `Bearer ${stack.runtimeToken}` };
  const call = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          const rec = JSON.parse(text) as { state?: string; outcome?: { output?: { value?: unknown } } };
          if (res.statusCode !== 200 || rec.state !== 'completed' || rec.outcome?.output?.value !== ECHO_VALUE) {
            reject(new Error(`POST /v1/calls answered ${res.statusCode}: ${text.slice(0, 200)}`));
          } else resolve();
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  return {
    name: `full path (HTTP → bridge → agent, journal ${settings.synchronous.toUpperCase()})`,
    call,
    async close() {
      agent.destroy();
      await stack.stop();
    },
  };
}
