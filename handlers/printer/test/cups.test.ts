/**
 * The printer handler through a real CUPS scheduler (a private cupsd on its own port and folders) with a
 * queue made by `lpadmin -m everywhere` that points at a real ippeveprinter: the queue is listed, a job
 * through CUPS reaches the printer, a held job is seen and cancelled, a stopped queue reports its state
 * and a queue that refuses jobs gives device_unavailable.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startCups, startIppEve, startSocketPrinter, tempDir, until, type Cups, type IppEve } from './peers.js';
import { call, ctxFor, failsWith, makeFns, makePdf, startBlobs, type Blobs, type Fns } from './harness.js';

type Job = { job_id?: number; state: string; reasons: string[] };

describe('printer.* through CUPS', () => {
  let p: IppEve;
  let cups: Cups;
  let blobs: Blobs;
  let fns: Fns;
  let dir: string;
  // Unique per run: CUPS keeps queues across restarts (here in its private state folder, removed after).
  const q = `aios_${randomBytes(4).toString('hex')}`;
  const ctx = () => ctxFor(blobs.client);

  before(async () => {
    [p, cups, blobs] = await Promise.all([startIppEve(), startCups(), startBlobs()]);
    dir = tempDir('aios-printer-cups-');
    const add = cups.run('lpadmin', ['-p', q, '-E', '-v', p.uri, '-m', 'everywhere']);
    assert.equal(add.status, 0, add.stderr);
    assert.equal(cups.run('lpadmin', ['-d', q]).status, 0);
    fns = await makeFns(['*'], { cups_server: cups.hostPort, poll_ms: 100 });
  });
  after(async () => {
    cups?.run('lpadmin', ['-x', q]);
    await Promise.all([p?.stop(), cups?.stop(), blobs?.close()]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the queue is listed by printer.list, idle, default, with what it supports', async () => {
    const out = (await call(fns, 'printer.list', {}, ctx())) as { printers: Record<string, unknown>[]; spooler: string; spooler_reachable: boolean };
    assert.equal(out.spooler, 'cups');
    assert.equal(out.spooler_reachable, true);
    const mine = out.printers.find((x) => x['id'] === q);
    assert.ok(mine, JSON.stringify(out.printers.map((x) => x['id'])));
    assert.equal(mine['kind'], 'cups');
    assert.equal(mine['state'], 'idle');
    assert.equal(mine['granted'], true);
    assert.equal(mine['is_default'], true);
    assert.ok((mine['supports'] as { document_formats: string[] }).document_formats.includes('application/pdf'));
  });

  test('a PDF printed on the queue reaches the printer behind it', async () => {
    const pdf = path.join(dir, 'via-cups.pdf');
    await makePdf(pdf, 2);
    const blob = await blobs.put(pdf, 'application/pdf');
    const before = p.files().length;
    const out = (await call(fns, 'printer.print', { printer: q, blob, document_name: 'via-cups.pdf', wait: 'completed' }, ctx())) as { job: Job };
    assert.equal(out.job.state, 'completed');
    // CUPS may filter the document on the way: assert that a job arrived, not its bytes.
    await until(() => p.files().length > before, 30_000, 'job at the printer');
  });

  test('raw bytes through a raw queue (lpadmin without a model) reach the AppSocket printer behind it unchanged', async () => {
    const label = await startSocketPrinter();
    const rawq = `${q}_raw`;
    try {
      const add = cups.run('lpadmin', ['-p', rawq, '-E', '-v', label.uri]);
      assert.equal(add.status, 0, add.stderr);
      const zpl = Buffer.from('^XA^FO50,50^ADN,36,20^FD打印 AIOS label^FS^XZ\n');
      const got = label.next();
      const out = (await call(fns, 'printer.print_raw', { printer: rawq, data: zpl.toString('base64'), document_name: 'label.zpl' }, ctx())) as { format: string; job: Job };
      assert.equal(out.format, 'application/vnd.cups-raw');
      assert.ok(['pending', 'processing', 'completed'].includes(out.job.state));
      assert.deepEqual(await got, zpl);
    } finally {
      cups.run('lpadmin', ['-x', rawq]);
      await label.close();
    }
  });

  test('a held job (lp -H hold) is pending-held, is listed, and cancel_job cancels it', async () => {
    const pdf = path.join(dir, 'held.pdf');
    await makePdf(pdf, 1);
    const lp = cups.run('lp', ['-d', q, '-H', 'hold', pdf]);
    assert.equal(lp.status, 0, lp.stderr);
    const id = Number(/request id is \S+-(\d+)/.exec(lp.stdout)![1]);
    const st = (await call(fns, 'printer.job_status', { printer: q, job_id: id }, ctx())) as { job: Job };
    assert.equal(st.job.state, 'pending-held');
    assert.ok(st.job.reasons.includes('job-hold-until-specified'), st.job.reasons.join());
    const jobs = (await call(fns, 'printer.list_jobs', { printer: q }, ctx())) as { jobs: Job[] };
    assert.ok(jobs.jobs.some((j) => j.job_id === id && j.state === 'pending-held'));
    const before = p.files().length;
    const c = (await call(fns, 'printer.cancel_job', { printer: q, job_id: id }, ctx())) as { job: Job };
    assert.equal(c.job.state, 'canceled');
    assert.doesNotMatch(cups.run('lpstat', ['-o', q]).stdout, new RegExp(`${q}-${id}\\b`));
    assert.equal(p.files().length, before, 'the held job never reached the printer');
  });

  test('a stopped queue (cupsdisable) reports stopped/paused and keeps new jobs pending; a rejecting one gives device_unavailable', async () => {
    assert.equal(cups.run('cupsdisable', [q]).status, 0);
    try {
      const listed = (await call(fns, 'printer.get_attributes', { printer: q }, ctx())) as { printer: { state: string; reasons: string[] } };
      assert.equal(listed.printer.state, 'stopped');
      assert.ok(listed.printer.reasons.includes('paused'), JSON.stringify(listed.printer));
      // CUPS takes the job and keeps it pending (its job-state-reasons say only "none"); the answer
      // carries the printer's own state so the caller can see why nothing comes out.
      const out = (await call(fns, 'printer.print', { printer: q, text: 'queued while stopped' }, ctx())) as { job: Job; printer_state: { state: string; reasons: string[] } };
      assert.equal(out.job.state, 'pending');
      assert.deepEqual(out.printer_state, { state: 'stopped', reasons: ['paused'] });
      const st = (await call(fns, 'printer.job_status', { printer: q, job_id: out.job.job_id }, ctx())) as { job: Job };
      assert.equal(st.job.state, 'pending', JSON.stringify(st.job));
      await call(fns, 'printer.cancel_job', { printer: q, job_id: out.job.job_id }, ctx());
    } finally {
      cups.run('cupsenable', [q]);
    }
    assert.equal(cups.run('cupsreject', [q]).status, 0);
    try {
      const e = await failsWith(call(fns, 'printer.print', { printer: q, text: 'refused' }, ctx()), 'device_unavailable', 'not_accepting_jobs');
      assert.equal(e.details?.['ipp_status'], 'server-error-not-accepting-jobs');
    } finally {
      cups.run('cupsaccept', [q]);
    }
  });

  test('a queue that does not exist is device_unavailable (not_found)', async () => {
    const e = await failsWith(call(fns, 'printer.get_attributes', { printer: `${q}_missing` }, ctx()), 'device_unavailable', 'not_found');
    assert.equal(e.details?.['ipp_status'], 'client-error-not-found');
  });
});
