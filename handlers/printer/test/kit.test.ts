/**
 * The printer handler inside the real call path (createTestHost: dispatcher, journal, grant store,
 * schemas, catalogues) on a real ippeveprinter: grants with aliases from the config, an ungranted printer
 * rejected before any prompt, the prompt sentence in English and Chinese, and a cancel of a call that
 * waits for completion cancelling the job at the printer.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createTestHost } from '../../../src/kit/testing.js';
import handler from '../index.js';
import { startIppEve, tempDir, until, type IppEve } from './peers.js';
import { makePdf } from './harness.js';

describe('printer.* in the kit test host', () => {
  let p: IppEve;
  let slow: IppEve;
  let dir: string;
  before(async () => {
    dir = tempDir('aios-printer-kit-');
    const script = path.join(dir, 'slow.sh');
    fs.writeFileSync(script, '#!/bin/sh\nsleep 60\n', { mode: 0o755 });
    [p, slow] = await Promise.all([startIppEve(), startIppEve({ command: script, formats: 'application/pdf' })]);
  });
  after(async () => {
    await Promise.all([p.stop(), slow.stop()]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the prompt says what is printed where; an ungranted printer is rejected with no prompt', async () => {
    const host = await createTestHost(handler, { grants: { printers: [{ alias: 'front-desk', printer: p.uri }, 'q1'] } });
    try {
      const pdf = path.join(dir, 'invoice.pdf');
      await makePdf(pdf, 3);
      const out = await host.call('printer.print', { printer: 'front-desk', data: fs.readFileSync(pdf).toString('base64'), document_name: 'invoice.pdf', options: { copies: 2 } });
      assert.equal(out.state, 'completed', JSON.stringify(out.error));
      assert.deepEqual(host.prompts.map((x) => x.sentence), ['Print invoice.pdf (3 pages, 2 copies) on front-desk']);
      assert.deepEqual(host.prompts[0]!.resources, [{ kind: 'printers', id: p.uri, label: 'front-desk' }]);
      const before = p.files().length;
      const no = await host.call('printer.print', { printer: 'back-office', text: 'x' });
      assert.equal(no.state, 'rejected');
      assert.equal(no.error?.type, 'permission_denied');
      assert.equal(no.error?.side_effects, 'none');
      assert.equal(host.prompts.length, 1, 'no prompt for an ungranted printer');
      // "*" covers queue names, never a network URI.
      const uri = await host.call('printer.print_raw', { printer: `socket://127.0.0.1:${p.port}`, data: 'Xg==' });
      assert.equal(uri.state, 'rejected');
      assert.equal(uri.error?.type, 'permission_denied');
      assert.equal(p.files().length, before);
    } finally {
      await host.close();
    }
  });

  test('a document over the size limit is refused before the prompt', async () => {
    const host = await createTestHost(handler, { grants: { printers: [{ alias: 'front-desk', printer: p.uri }] }, options: { max_document_bytes: 1000 } });
    try {
      const blob = host.blobs.put(Buffer.alloc(5000, 0x20), 'application/pdf');
      const o = await host.call('printer.print', { printer: 'front-desk', blob });
      // PROTOCOL.md §6.2: payload_too_large is a contract error, state failed, side effects none.
      assert.equal(o.state, 'failed');
      assert.equal(o.error?.side_effects, 'none');
      assert.equal(o.error?.type, 'payload_too_large');
      assert.deepEqual(o.error?.details, { size: 5000, limit: 1000 });
      assert.equal(host.prompts.length, 0);
    } finally {
      await host.close();
    }
  });

  test('the prompt in Chinese', async () => {
    const host = await createTestHost(handler, { grants: { printers: [{ alias: 'front-desk', printer: p.uri }] }, locale: 'zh-CN' });
    try {
      const pdf = path.join(dir, 'big.pdf');
      await makePdf(pdf, 1, 1_200_000);
      const blob = host.blobs.put(fs.readFileSync(pdf), 'application/pdf');
      const out = await host.call('printer.print', { printer: 'front-desk', blob, document_name: '发票.pdf' });
      assert.equal(out.state, 'completed', JSON.stringify(out.error));
      // A blob is fetched only after the user agrees, so the prompt gives its size rather than its pages.
      assert.match(host.prompts[0]!.sentence, /^在 front-desk 上打印 发票\.pdf（1\.\d MB，1 份）$/);
    } finally {
      await host.close();
    }
  });

  test('cancelling a call that waits for completion cancels the job at the printer', async () => {
    const host = await createTestHost(handler, { grants: { printers: [{ alias: 'slow', printer: slow.uri }] }, options: { poll_ms: 50 } });
    try {
      const { callId, outcome } = host.start('printer.print', { printer: 'slow', text: 'wait', wait: 'completed' });
      await until(() => host.progress.some((n) => n.call_id === callId && /processing/.test(n.message ?? '')), 20_000, 'job processing');
      await host.cancel(callId);
      const o = await outcome;
      assert.equal(o.state, 'cancelled');
      const jobs = await host.call('printer.list_jobs', { printer: 'slow', which: 'all' });
      const job = (jobs.output as { jobs: { state: string; reasons: string[] }[] }).jobs[0]!;
      assert.ok(job.state === 'canceled' || job.reasons.includes('processing-to-stop-point'), JSON.stringify(job));
    } finally {
      await host.close();
    }
  });
});
