/**
 * printer.print of a 1 MiB PDF through the whole path (blob PUT to the bridge, POST /v1/calls with wait,
 * bridge → agent over the device WebSocket, the handler's Print-Job to CUPS) until the job is `pending`,
 * against `lp` of the same file on the same CUPS queue, as a ratio measured in the same run. Bridge and
 * agent are CLI processes; CUPS is a private cupsd with a queue made by `lpadmin -m everywhere` in front
 * of ippeveprinter, kept stopped (cupsdisable) so that both sides measure "accepted", not printing.
 * Run: node --import tsx bench/printer-print.ts [iterations]
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { HttpBlobClient } from '../src/agent/blob-client.js';
import { processStack, tempDir } from '../test/helpers/stack.js';
import { startCups, startIppEve } from '../handlers/printer/test/peers.js';
import { makePdf } from '../handlers/printer/test/harness.js';
import { median, quantile } from './stats.js';

const N = Number(process.argv[2] ?? 20);

function lp(hostPort: string, q: string, file: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const p = spawn('lp', ['-d', q, file], { env: { ...process.env, CUPS_SERVER: hostPort }, stdio: 'ignore' });
    p.on('exit', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`lp exited ${code}`))));
  });
}

async function main(): Promise<void> {
  const [printer, cups] = await Promise.all([startIppEve(), startCups()]);
  const q = `aios_bench_${randomBytes(3).toString('hex')}`;
  const dir = tempDir('aios-bench-printer-');
  let stack: Awaited<ReturnType<typeof processStack>> | undefined;
  try {
    if (cups.run('lpadmin', ['-p', q, '-E', '-v', printer.uri, '-m', 'everywhere']).status !== 0) throw new Error('lpadmin failed');
    cups.run('cupsdisable', [q]);
    const pdf = path.join(dir, 'one-mib.pdf');
    await makePdf(pdf, 2, 1024 * 1024);
    const size = fs.statSync(pdf).size;
    stack = await processStack({
      agent: {
        grants: { printers: [q] },
        policy: { 'printer.print': 'allow' },
        confirmations: { provider: 'none' },
        handlers: { printer: { cups_server: cups.hostPort } },
        log: { level: 'info', file: path.join(dir, 'agent.log') },
      },
    });
    const blobs = new HttpBlobClient({ baseUrl: stack.url, token: () => stack!.tokens.runtime });
    const viaAgent = async () => {
      const t0 = performance.now();
      const blob = await blobs.uploadFile(pdf, 'application/pdf');
      const r = await stack!.client.call('printer.print', { printer: q, blob, document_name: 'one-mib.pdf' });
      const out = r.record.outcome?.output as { job?: { state: string } } | undefined;
      if (out?.job?.state !== 'pending') throw new Error(`printer.print ended ${r.record.state}: ${JSON.stringify(r.record.outcome?.error ?? out)}`);
      return performance.now() - t0;
    };
    // Warm-up: first connections, first PPD read by CUPS, JIT.
    await viaAgent();
    await lp(cups.hostPort, q, pdf);
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < N; i++) {
      // Alternating, so drift on a shared machine hits both sides alike.
      a.push(await viaAgent());
      b.push(await lp(cups.hostPort, q, pdf));
    }
    a.sort((x, y) => x - y);
    b.sort((x, y) => x - y);
    const fmt = (xs: number[]) => `median ${median(xs).toFixed(1)} ms, p90 ${quantile(xs, 0.9).toFixed(1)} ms`;
    process.stdout.write(`printer.print of a ${(size / 1048576).toFixed(2)} MiB PDF to pending, ${N} runs each\n`);
    process.stdout.write(`  whole path (blob PUT + POST /v1/calls → bridge → agent → CUPS): ${fmt(a)}\n`);
    process.stdout.write(`  lp -d <queue> (same file, same queue):                          ${fmt(b)}\n`);
    process.stdout.write(`  ratio (median whole path / median lp): ${(median(a) / median(b)).toFixed(2)}\n`);
  } finally {
    cups.run('cancel', ['-a', q]);
    cups.run('lpadmin', ['-x', q]);
    await stack?.stop();
    await Promise.all([printer.stop(), cups.stop()]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
