/**
 * One worker process of `bench/bridge-scale.ts`: thousands of simulated devices (bench/sim-device.ts), each
 * with its own token and its own signed Adapter Card (the built-in handlers' descriptors, real size),
 * connecting with bounded concurrency, answering invokes, sending heartbeats, and reconnecting after a drop
 * with the agent's backoff and full jitter (PROTOCOL.md §1, `backoffDelay`). Driven over IPC.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeyPair, exportJWK } from 'jose';
import { readAdapterManifest } from '../src/discovery/adapter-tools.js';
import { buildDeviceCard, skillToDescriptor } from '../src/discovery/card.js';
import { signCard } from '../src/protocol/card-sign.js';
import { backoffDelay, DEFAULT_BACKOFF } from '../src/agent/session.js';
import type { Descriptor } from '../src/protocol/messages.js';
import { PROJECT_ROOT } from '../src/version.js';
import { SimDevice, SIM_ECHO } from './sim-device.js';

/** What the driver sends. */
export type WorkerCommand =
  | {
      cmd: 'start';
      url: string;
      /** Several nodes (bench/cluster.ts): each device gets them all, starting at its own (spread evenly, as a load balancer would). */
      urls?: string[];
      devices: { token: string; device_id: string }[];
      workspace_id: string;
      user_id: string;
      concurrency: number;
    }
  /** Devices online with a session that began at or after `since`; a session on `notOn` counts only if it did (one begun before is on a node that was killed). */
  | { cmd: 'count'; since: number; notOn?: string }
  | { cmd: 'stop' };

/** What a worker answers. */
export type WorkerReport =
  | { type: 'cards'; bytes: number }
  /** `byUrl`: the devices online, by the address their session is on. */
  | { type: 'count'; online: number; total: number; refused: number; byUrl: Record<string, number> }
  | { type: 'error'; message: string };

const send = (m: WorkerReport) => process.send?.(m);

/** The built-in handlers' descriptors: what a real device's card lists. */
async function realDescriptors(): Promise<Descriptor[]> {
  const dir = join(PROJECT_ROOT, 'handlers');
  const out: Descriptor[] = [];
  for (const name of readdirSync(dir)) {
    try {
      const { card } = await readAdapterManifest(join(dir, name));
      for (const s of card.skills) out.push(skillToDescriptor(s, card.adapter) as Descriptor);
    } catch {
      /* a folder without a manifest */
    }
  }
  return out;
}

let devices: SimDevice[] = [];
let refused = 0;
let stopping = false;

async function start(c: Extract<WorkerCommand, { cmd: 'start' }>): Promise<void> {
  const descriptors = [SIM_ECHO, ...(await realDescriptors()).filter((d) => d.id !== SIM_ECHO.id)];
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const publicJwk = { ...(await exportJWK(publicKey)), kid: 'scale-bench' };
  const key = { kid: 'scale-bench', privateKey, publicJwk, alg: 'ES256' as const };
  let bytes = 0;
  for (const [i, d] of c.devices.entries()) {
    const card = await signCard(buildDeviceCard({ deviceId: d.device_id, deviceName: `Simulated ${d.device_id}`, version: '9.0.0', http: 'http://127.0.0.1:9527' }, descriptors), key);
    const json = JSON.stringify(card);
    bytes = json.length;
    const urls = c.urls?.length ? [...c.urls.slice(i % c.urls.length), ...c.urls.slice(0, i % c.urls.length)] : undefined;
    const sim = new SimDevice({ url: c.url, ...(urls ? { urls } : {}), token: d.token, identity: { workspace_id: c.workspace_id, user_id: c.user_id, device_id: d.device_id }, adapterCardJson: json, functions: descriptors });
    devices.push(sim);
  }
  send({ type: 'cards', bytes });
  // Bounded concurrency for the first connect; after that each device keeps itself connected.
  let next = 0;
  const lane = async () => {
    while (next < devices.length) {
      const d = devices[next++]!;
      await keepConnected(d, 0);
    }
  };
  await Promise.all(Array.from({ length: Math.min(c.concurrency, devices.length) }, lane));
}

/** Connects, and on every drop reconnects after the agent's backoff with full jitter; resolves after the first attempt settles. */
async function keepConnected(d: SimDevice, attempt: number): Promise<void> {
  if (stopping) return;
  let upAt = 0;
  d.onclose = () => {
    if (stopping || !upAt) return;
    // A session that stayed up long enough resets the backoff (§1).
    const a = Date.now() - upAt >= DEFAULT_BACKOFF.resetAfterMs ? 0 : attempt;
    upAt = 0;
    setTimeout(() => void keepConnected(d, a), backoffDelay(a, DEFAULT_BACKOFF));
  };
  try {
    await d.connect();
    upAt = Date.now();
    attempt = 0;
  } catch (e) {
    if (/client_outdated|identity_mismatch|HTTP 401/.test(String((e as Error).message))) {
      refused++;
      return;
    }
    d.onclose = undefined;
    d.close(true);
    setTimeout(() => void keepConnected(d, attempt + 1), backoffDelay(attempt, DEFAULT_BACKOFF));
  }
}

function count(since: number, notOn: string | undefined): WorkerReport {
  let online = 0;
  const byUrl: Record<string, number> = {};
  for (const d of devices) {
    if (!d.online) continue;
    const url = d.sessionUrl ?? '';
    byUrl[url] = (byUrl[url] ?? 0) + 1;
    if (d.connectedAt >= since || (notOn !== undefined && url !== notOn)) online++;
  }
  return { type: 'count', online, total: devices.length, refused, byUrl };
}

process.on('message', (m: WorkerCommand) => {
  if (m.cmd === 'start') void start(m).catch((e: unknown) => send({ type: 'error', message: String(e) }));
  else if (m.cmd === 'count') send(count(m.since, m.notOn));
  else if (m.cmd === 'stop') {
    stopping = true;
    for (const d of devices) d.close(true);
    devices = [];
    setTimeout(() => process.exit(0), 100);
  }
});
process.on('disconnect', () => process.exit(0));
