/**
 * Bluetooth reads against the protocol simulator (handlers/bluetooth/test/simulator.ts: noble's
 * WebSocket binding protocol on localhost:2846; A SIMULATOR, NOT A RADIO, so the figures are the
 * software path's cost, not a radio's):
 *   - noble alone: noble's JS API in this process, one open connection, `characteristic.read` in a loop;
 *   - the whole path: runtime HTTP `POST /v1/calls` (wait) → bridge (own process) → agent (own process)
 *     → bluetooth handler (pooled connection, grant check, lock ble:<id>) → noble → simulator.
 * Reports reads/s and latency of each, and the ratio of the whole path's median latency to noble alone's
 * (the agent's added latency as a ratio), measured in the same run with interleaved rounds.
 *
 * Run: npm run bench:bluetooth [-- --latency N --throughput N --concurrency N --rounds N --json]
 * Port 2846 is fixed by noble's binding: do not run this next to the bluetooth simulator tests.
 */
import { parseArgs } from 'node:util';
import { loadNoble } from '../handlers/bluetooth/noble-loader.js';
import type { NobleCharacteristic, NoblePeripheral, NobleService } from '../handlers/bluetooth/noble-types.js';
import { BleSimulator, type SimPeripheral } from '../handlers/bluetooth/test/simulator.js';
import { isMain, positiveInt, runMain } from './child.js';
import { runtimeCaller, startDeviceStack } from './device-stack.js';
import { measureTargets, type BenchCounts, type BenchResult, type BenchTarget } from './stats.js';

/** Two identical thermometers: a peripheral takes one central, and each side needs its own. */
function benchPeripherals(): SimPeripheral[] {
  return ['be0c00000001', 'be0c00000002'].map((id, i) => ({
    id,
    address: id.match(/../g)!.join(':'),
    name: `Bench TH ${i + 1}`,
    rssi: -50,
    advertised: ['181a'],
    services: [{ uuid: '181a', characteristics: [{ uuid: '2a6e', properties: ['read'], value: Buffer.from([0x20, 0x03]) }] }],
  }));
}

const cb = <T>(fn: (done: (err: unknown, v: T) => void) => void) => new Promise<T>((resolve, reject) => fn((err, v) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(v))));

/** noble alone, in this process: connected once, then one read per call. */
async function openNobleAlone(): Promise<BenchTarget> {
  const loaded = await loadNoble('websocket', () => undefined, () => Promise.reject(new Error('the bench uses the WebSocket binding only')));
  const noble = loaded.noble;
  if (noble.state !== 'poweredOn') await new Promise<void>((r) => noble.once('stateChange', () => r()));
  const p = await new Promise<NoblePeripheral>((resolve, reject) => {
    noble.on('discover', (x: NoblePeripheral) => x.id === 'be0c00000001' && resolve(x));
    noble.startScanning([], false, (err) => err && reject(err instanceof Error ? err : new Error(String(err))));
  });
  noble.stopScanning();
  await cb<void>((d) => p.connect((e) => d(e, undefined)));
  const [svc] = await cb<NobleService[]>((d) => p.discoverServices(['181a'], d));
  const [ch] = await cb<NobleCharacteristic[]>((d) => svc!.discoverCharacteristics(['2a6e'], d));
  return {
    name: 'noble alone (WebSocket binding → simulator)',
    async call() {
      const v = await cb<Buffer>((d) => ch!.read(d));
      if (v.toString('hex') !== '2003') throw new Error('noble read the wrong value');
    },
    async close() {
      p.disconnect();
      loaded.close();
    },
  };
}

/** The whole path: runtime HTTP → bridge → agent → bluetooth.read → noble → simulator. */
async function openWholePath(concurrency: number): Promise<BenchTarget> {
  const stack = await startDeviceStack(
    { synchronous: 'normal', log: 'silent', config: { grants: { bluetooth: ['be0c00000002'] }, handlers: { bluetooth: { binding: 'websocket', idle_ms: 600_000 } } } },
    'child',
  );
  const caller = runtimeCaller(stack, concurrency, 'bluetooth.read', { device: 'be0c00000002', service: '181a', characteristic: '2a6e' }, (o) => (o as { hex?: string } | undefined)?.hex === '2003');
  return {
    name: 'whole path (HTTP → bridge → agent → bluetooth.read → noble → simulator)',
    call: caller.call,
    async close() {
      caller.close();
      await stack.stop();
    },
  };
}

/** What the Bluetooth bench measured. */
export interface BluetoothBenchReport {
  counts: BenchCounts;
  results: BenchResult[];
  /** Whole path's median latency / noble alone's. */
  latencyRatio: number;
  /** Whole path's median latency − noble alone's, in ms. */
  addedMs: number;
}

/** Runs the bench: simulator up, both targets measured in interleaved rounds, everything closed. */
export async function runBluetoothBench(counts: BenchCounts, say: (l: string) => void = () => undefined): Promise<BluetoothBenchReport> {
  const sim = await new BleSimulator(benchPeripherals()).start();
  const open: BenchTarget[] = [];
  try {
    say('noble alone: connecting');
    open.push(await openNobleAlone());
    say('whole path: starting bridge and agent');
    open.push(await openWholePath(counts.concurrency));
    const results = await measureTargets(open, counts, say);
    const [alone, whole] = results as [BenchResult, BenchResult];
    return { counts, results, latencyRatio: whole.latency.p50Us / alone.latency.p50Us, addedMs: (whole.latency.p50Us - alone.latency.p50Us) / 1000 };
  } finally {
    for (const t of open) await t.close().catch(() => undefined);
    await sim.stop();
  }
}

if (isMain(import.meta.url)) {
  runMain('bench:bluetooth', async () => {
    const { values } = parseArgs({ options: { warmup: { type: 'string' }, latency: { type: 'string' }, throughput: { type: 'string' }, concurrency: { type: 'string' }, rounds: { type: 'string' }, json: { type: 'boolean' } } });
    const n = (k: 'warmup' | 'latency' | 'throughput' | 'concurrency' | 'rounds', def: number) => (values[k] ? positiveInt(values[k], k) : def);
    const counts: BenchCounts = { warmup: n('warmup', 50), latencyN: n('latency', 300), throughputN: n('throughput', 300), concurrency: n('concurrency', 4), rounds: n('rounds', 3) };
    const r = await runBluetoothBench(counts, (l) => process.stderr.write(`${l}\n`));
    if (values.json) {
      process.stdout.write(JSON.stringify(r, null, 2) + '\n');
      return;
    }
    for (const x of r.results) {
      process.stdout.write(`${x.name}\n  reads/s ${x.throughput.callsPerS.toFixed(0)} (${x.throughput.concurrency} in flight)  p50 ${(x.latency.p50Us / 1000).toFixed(2)} ms  p99 ${(x.latency.p99Us / 1000).toFixed(2)} ms\n`);
    }
    process.stdout.write(`whole path / noble alone, median latency: ${r.latencyRatio.toFixed(2)}x (+${r.addedMs.toFixed(2)} ms per read)\n`);
  });
}
