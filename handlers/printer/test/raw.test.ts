/**
 * printer.print_raw to an AppSocket (JetDirect) printer played by a TCP listener on loopback: that is the
 * real protocol (bytes in, nothing back). ZPL arrives byte for byte, inline and from a blob; a printer
 * that goes away mid-job or is not there is device_unavailable.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { freePort, startSocketPrinter, tempDir, type SocketPrinter } from './peers.js';
import { call, ctxFor, failsWith, logLines, makeFns, startBlobs, type Blobs } from './harness.js';
import { normalizeGrant } from '../grants.js';
import type { GrantsView } from '../../../src/sdk/index.js';

describe('printer.print_raw over AppSocket', () => {
  let label: SocketPrinter;
  let blobs: Blobs;
  let dir: string;
  const ctx = () => ctxFor(blobs.client);

  before(async () => {
    [label, blobs] = await Promise.all([startSocketPrinter(), startBlobs()]);
    dir = tempDir('aios-printer-raw-');
  });
  after(async () => {
    await Promise.all([label.close(), blobs.close()]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('ZPL inline arrives byte-identical; the state is "sent", no job id', async () => {
    const fns = await makeFns([{ alias: 'labels', printer: label.uri }]);
    const zpl = Buffer.from('^XA\n^CI28\n^FO40,40^A0N,40,40^FD收货人 Receiver^FS\n^FO40,100^BCN,80,Y,N,N^FD123456789^FS\n^XZ\n');
    const got = label.next();
    const out = (await call(fns, 'printer.print_raw', { printer: 'labels', data: zpl.toString('base64'), encoding: 'base64', document_name: 'label.zpl' }, ctx())) as { job: { state: string; job_id?: number }; size: number; printer: string };
    assert.deepEqual(await got, zpl);
    assert.equal(out.job.state, 'sent');
    assert.equal(out.job.job_id, undefined);
    assert.equal(out.size, zpl.length);
    assert.equal(out.printer, 'labels');
    assert.ok(!logLines.join('\n').includes('Receiver'), 'no document content in logs');
  });

  test('a 4 MiB blob arrives byte-identical', async () => {
    const fns = await makeFns([{ alias: 'labels', printer: label.uri }]);
    const file = path.join(dir, 'big.prn');
    fs.writeFileSync(file, randomBytes(4 * 1024 * 1024));
    const blob = await blobs.put(file, 'application/octet-stream');
    const got = label.next();
    await call(fns, 'printer.print_raw', { printer: 'labels', blob }, ctx());
    const h = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    assert.equal(h(await got), h(fs.readFileSync(file)));
  });

  test('the printer closing the connection mid-job is device_unavailable (connection_lost), side effects possible', async () => {
    const cutter = await startSocketPrinter({ cutAfter: 64 * 1024 });
    try {
      const fns = await makeFns([{ alias: 'flaky', printer: cutter.uri }]);
      const file = path.join(dir, 'cut.prn');
      fs.writeFileSync(file, randomBytes(16 * 1024 * 1024));
      const blob = await blobs.put(file, 'application/octet-stream');
      const e = await failsWith(call(fns, 'printer.print_raw', { printer: 'flaky', blob }, ctx()), 'device_unavailable', 'connection_lost');
      assert.equal(e.sideEffects, 'possible');
      assert.equal(cutter.received.length, 1);
      assert.ok(cutter.received[0]!.length < 16 * 1024 * 1024, 'the printer took only part of the job');
    } finally {
      await cutter.close();
    }
  });

  test('nobody listening is device_unavailable (unreachable), nothing sent', async () => {
    const fns = await makeFns([{ alias: 'off', printer: `socket://127.0.0.1:${await freePort()}` }]);
    const e = await failsWith(call(fns, 'printer.print_raw', { printer: 'off', data: 'Xg==' }, ctx()), 'device_unavailable', 'unreachable');
    assert.equal(e.sideEffects, 'none');
  });

  test('AppSocket has no jobs: job_status and cancel_job say so; a "*" grant does not cover a socket URI', async () => {
    const fns = await makeFns([{ alias: 'labels', printer: label.uri }]);
    await failsWith(call(fns, 'printer.job_status', { printer: 'labels', job_id: 1 }, ctx()), 'invalid_arguments', 'no_job_status');
    await failsWith(call(fns, 'printer.cancel_job', { printer: 'labels', job_id: 1 }, ctx()), 'invalid_arguments', 'no_job_status');
    const star = await makeFns(['*']);
    const before = label.received.length;
    await failsWith(call(star, 'printer.print_raw', { printer: label.uri, data: 'Xg==' }, ctx()), 'permission_denied', 'not_granted');
    assert.equal(label.received.length, before, 'no connection was made');
  });

  test('raw jobs to one AppSocket printer are serialised by the default lock on it; IPP printers take none', async () => {
    const grants = [normalizeGrant({ alias: 'labels', printer: label.uri }), normalizeGrant({ alias: 'desk', printer: 'ipp://127.0.0.1:1/ipp/print' })];
    const view: GrantsView = { list: () => grants, find: () => undefined, on: () => undefined, off: () => undefined };
    const fns = await makeFns([{ alias: 'labels', printer: label.uri }]);
    const fn = fns.get('printer.print_raw')!;
    const [sock] = await fn.resources!({ printer: 'labels', data: 'Xg==' }, { grants: view });
    assert.deepEqual(sock, { kind: 'printers', id: label.uri, label: 'labels' });
    const [ipp] = await fn.resources!({ printer: 'desk', data: 'Xg==' }, { grants: view });
    assert.equal(ipp!.lock, false);
  });
});
