/**
 * The instrument side of the serial benchmark, in its own process: a scale answering `W\r\n` with
 * `  12.34 kg\r\n` on each pty path given on the command line.
 * Run by bench/serial.ts: node bench/serial-scale-child.js <ttyB> [<ttyB2> ...]
 */
import { Instrument, scale } from '../test/peers/serial-pty.js';
import { announceReady, exitOnSignal } from './child.js';

async function main(): Promise<void> {
  const scales = await Promise.all(process.argv.slice(2).map((p) => Instrument.open(p, scale())));
  exitOnSignal(async () => {
    await Promise.all(scales.map((s) => s.close()));
  });
  announceReady({ pid: process.pid, ports: scales.length });
}

void main();
