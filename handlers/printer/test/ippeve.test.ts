/**
 * The printer handler against a real IPP Everywhere printer (ippeveprinter): list, attributes, a PDF
 * blob arriving byte for byte, text in Latin and Chinese, PNG, copies and media as the printer received
 * them, waiting, busy and killed printers, and the refusals that come before any byte moves.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { PNG } from 'pngjs';
import { startIppEve, tempDir, until, freePort, type IppEve } from './peers.js';
import { call, ctxFor, failsWith, jobAttrsByIpptool, logLines, makeFns, makePdf, sha, startBlobs, tool, type Blobs, type Fns } from './harness.js';

type Job = { job_id?: number; state: string; reasons: string[] };

function makePng(file: string, w: number, h: number): void {
  const png = new PNG({ width: w, height: h });
  for (let i = 0; i < w * h; i++) png.data.writeUInt32BE((((i * 2654435761) >>> 0) | 0xff) >>> 0, i * 4);
  fs.writeFileSync(file, PNG.sync.write(png));
}

describe('printer.* on ippeveprinter', () => {
  let p: IppEve;
  let blobs: Blobs;
  let fns: Fns;
  let dir: string;
  const ctx = () => ctxFor(blobs.client);

  before(async () => {
    [p, blobs] = await Promise.all([startIppEve(), startBlobs()]);
    dir = tempDir('aios-printer-test-');
    fns = await makeFns([{ alias: 'front-desk', printer: p.uri }]);
  });
  after(async () => {
    await Promise.all([p.stop(), blobs.close()]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('list: the granted printer with its make, state and what it supports', async () => {
    const out = (await call(fns, 'printer.list', {}, ctx())) as { printers: Record<string, unknown>[] };
    const mine = out.printers.find((x) => x['alias'] === 'front-desk');
    assert.ok(mine, JSON.stringify(out));
    assert.equal(mine['make_and_model'], 'Example Printer');
    assert.equal(mine['state'], 'idle');
    assert.equal(mine['granted'], true);
    const sup = mine['supports'] as { document_formats: string[]; media: string[]; copies: { min: number; max: number } };
    assert.ok(sup.document_formats.includes('application/pdf'));
    assert.ok(sup.media.includes('iso_a4_210x297mm'));
    assert.deepEqual(sup.copies, { min: 1, max: 999 });
  });

  test('get_attributes: every IPP attribute, enums by name', async () => {
    const out = (await call(fns, 'printer.get_attributes', { printer: 'front-desk' }, ctx())) as { printer: { name: string }; attributes: Record<string, unknown> };
    assert.equal(out.printer.name, 'TestPrinter');
    assert.equal(out.attributes['printer-state'], 'idle');
    assert.equal(out.attributes['printer-name'], 'TestPrinter');
    assert.ok((out.attributes['operations-supported'] as string[]).includes('Print-Job'));
  });

  test('a PDF from a blob arrives byte-identical; the answer is the state the printer gave, not "printed"', async () => {
    const pdf = path.join(dir, 'invoice.pdf');
    await makePdf(pdf, 3);
    const blob = await blobs.put(pdf, 'application/pdf');
    const before = p.files().length;
    const c = ctx();
    const out = (await call(fns, 'printer.print', { printer: 'front-desk', blob, document_name: 'invoice.pdf' }, c)) as { job: Job; format: string };
    assert.ok(['pending', 'processing', 'completed'].includes(out.job.state), out.job.state);
    assert.equal(out.format, 'application/pdf');
    await until(() => p.files().length > before, 20_000, 'spool file');
    const got = p.files().find((f) => f.startsWith(`${out.job.job_id}-`))!;
    assert.match(got, /\.pdf$/);
    assert.equal(sha(path.join(p.spool, got)), sha(pdf));
    assert.ok(c.progressSeen.some((x) => x.total === fs.statSync(pdf).size), 'byte progress reported');
    assert.ok(!logLines.join('\n').includes('Page 1'), 'no document content in logs');
  });

  test('copies, media, sides and orientation as the printer received them', async () => {
    const pdf = path.join(dir, 'two.pdf');
    await makePdf(pdf, 1);
    const data = fs.readFileSync(pdf).toString('base64');
    const out = (await call(fns, 'printer.print', { printer: 'front-desk', data, encoding: 'base64', options: { copies: 2, media: 'iso_a4_210x297mm', sides: 'one-sided', orientation: 'landscape', job_name: 'Quarterly' } }, ctx())) as { job: Job };
    const attrs = jobAttrsByIpptool(p.uri, out.job.job_id!, dir);
    assert.equal(attrs['copies'], '2');
    assert.equal(attrs['media'], 'iso_a4_210x297mm');
    assert.equal(attrs['sides'], 'one-sided');
    assert.equal(attrs['orientation-requested'], 'landscape');
    assert.equal(attrs['job-name'], 'Quarterly');
  });

  test('text in Latin and Chinese becomes a PDF with the CJK font embedded', async () => {
    const before = p.files().length;
    const out = (await call(fns, 'printer.print', { printer: 'front-desk', text: 'Hello, printer.\n打印测试：发票已开具。\nZeile drei — café', wait: 'completed' }, ctx())) as { job: Job; format: string; converted_from: string };
    assert.equal(out.converted_from, 'text/plain');
    assert.equal(out.format, 'application/pdf');
    assert.equal(out.job.state, 'completed');
    await until(() => p.files().length > before, 20_000, 'spool file');
    const f = path.join(p.spool, p.files().find((x) => x.startsWith(`${out.job.job_id}-`))!);
    const fonts = tool('pdffonts', [f]);
    // Embedded (emb) as a subset (sub, the ABCDEF+ prefix), with a Unicode map (uni) so text can be copied.
    assert.match(fonts, /[A-Z]{6}\+WenQuanYiMicroHei\s+CID TrueType\s+Identity-H\s+yes\s+yes\s+yes/, fonts);
    const text = tool('pdftotext', [f, '-']);
    assert.match(text, /打印测试：发票已开具。/);
    assert.match(text, /Hello, printer\./);
    assert.match(text, /café/);
  });

  test('a PNG goes as it is to a printer that takes PNG', async () => {
    const png = path.join(dir, 'pic.png');
    makePng(png, 40, 30);
    const before = p.files().length;
    const out = (await call(fns, 'printer.print', { printer: 'front-desk', data: fs.readFileSync(png).toString('base64') }, ctx())) as { job: Job; format: string };
    assert.equal(out.format, 'image/png');
    await until(() => p.files().length > before, 20_000, 'spool file');
    const f = p.files().find((x) => x.startsWith(`${out.job.job_id}-`))!;
    assert.match(f, /\.png$/);
    assert.equal(sha(path.join(p.spool, f)), sha(png));
  });

  test('options the printer cannot do are refused naming what it takes, before anything is sent', async () => {
    const before = p.files().length;
    const e = await failsWith(call(fns, 'printer.print', { printer: 'front-desk', text: 'x', options: { media: 'iso_a3_297x420mm', color_mode: 'color' } }, ctx()), 'invalid_arguments');
    assert.match(e.message, /na_letter_8\.5x11in/);
    const pointers = (e.details?.['violations'] as { pointer: string }[]).map((v) => v.pointer);
    assert.deepEqual(pointers, ['/options/media', '/options/color_mode']);
    assert.equal(p.files().length, before);
  });

  test('an ungranted printer is permission_denied; a document over the limit is payload_too_large before any byte moves', async () => {
    await failsWith(call(fns, 'printer.print', { printer: 'back-office', text: 'x' }, ctx()), 'permission_denied', 'not_granted');
    await failsWith(call(fns, 'printer.print', { printer: `ipp://127.0.0.1:${p.port}/ipp/other`, text: 'x' }, ctx()), 'permission_denied');
    const small = await makeFns([{ alias: 'front-desk', printer: p.uri }], { max_document_bytes: 1000 });
    const pdf = path.join(dir, 'big.pdf');
    await makePdf(pdf, 1, 5000);
    const blob = await blobs.put(pdf, 'application/pdf');
    const before = p.files().length;
    let downloaded = false;
    const c = ctxFor({ uploadFile: blobs.client.uploadFile.bind(blobs.client), downloadToFile: async (...a) => { downloaded = true; return blobs.client.downloadToFile(...a); } });
    const e = await failsWith(call(small, 'printer.print', { printer: 'front-desk', blob }, c), 'payload_too_large');
    assert.equal(e.details?.['limit'], 1000);
    assert.equal(downloaded, false, 'the blob was not even fetched');
    assert.equal(p.files().length, before);
  });

  test('an unreachable printer is device_unavailable (unreachable)', async () => {
    const dead = `ipp://127.0.0.1:${await freePort()}/ipp/print`;
    const f = await makeFns([{ alias: 'gone', printer: dead }], { connect_timeout_ms: 2000 });
    const e = await failsWith(call(f, 'printer.print', { printer: 'gone', text: 'x' }, ctx()), 'device_unavailable', 'unreachable');
    assert.equal(e.sideEffects, 'none');
    const listed = (await call(f, 'printer.list', {}, ctx())) as { printers: { alias?: string; state: string; reasons: string[] }[] };
    const gone = listed.printers.find((x) => x.alias === 'gone')!;
    assert.equal(gone.state, 'unknown');
    assert.deepEqual(gone.reasons, ['offline-report']);
  });

  test('job_status, list_jobs and cancel_job of a finished job', async () => {
    const out = (await call(fns, 'printer.print', { printer: 'front-desk', text: 'status', wait: 'completed' }, ctx())) as { job: Job };
    const st = (await call(fns, 'printer.job_status', { printer: 'front-desk', job_id: out.job.job_id }, ctx())) as { job: Job };
    assert.equal(st.job.state, 'completed');
    const all = (await call(fns, 'printer.list_jobs', { printer: 'front-desk', which: 'completed' }, ctx())) as { jobs: Job[] };
    assert.ok(all.jobs.some((j) => j.job_id === out.job.job_id && j.state === 'completed'));
    const e = await failsWith(call(fns, 'printer.cancel_job', { printer: 'front-desk', job_id: out.job.job_id }, ctx()), 'execution_failed', 'not_cancellable');
    assert.equal(e.details?.['ipp_status'], 'client-error-not-possible');
    await failsWith(call(fns, 'printer.job_status', { printer: 'front-desk', job_id: 99999 }, ctx()), 'invalid_arguments', 'not_found');
  });
});

describe('printer.* on a PDF-only printer and on slow ones', () => {
  let blobs: Blobs;
  let dir: string;
  let script: string;
  const started: IppEve[] = [];
  /** A printer whose "print" step takes a minute: jobs stay processing, and new ones find it busy. */
  const slowPrinter = async () => {
    const p = await startIppEve({ command: script, formats: 'application/pdf' });
    started.push(p);
    return { p, fns: await makeFns([{ alias: 'slow', printer: p.uri }], { busy_retry_ms: 1500, poll_ms: 50 }) };
  };

  before(async () => {
    dir = tempDir('aios-printer-slow-');
    script = path.join(dir, 'slow.sh');
    fs.writeFileSync(script, '#!/bin/sh\nsleep 60\n', { mode: 0o755 });
    blobs = await startBlobs();
  });
  after(async () => {
    await Promise.all([...started.map((p) => p.stop().catch(() => undefined)), blobs.close()]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a PNG for a PDF-only printer is put on a PDF page scaled to fit', async () => {
    const p = await startIppEve({ formats: 'application/pdf' });
    started.push(p);
    const png = path.join(dir, 'wide.png');
    makePng(png, 300, 100);
    const f = await makeFns([{ alias: 'pdf-only', printer: p.uri }]);
    const out = (await call(f, 'printer.print', { printer: 'pdf-only', data: fs.readFileSync(png).toString('base64'), options: { media: 'iso_a4_210x297mm' } }, ctxFor(blobs.client))) as { job: Job; converted_from: string; format: string };
    assert.equal(out.converted_from, 'image/png');
    assert.equal(out.format, 'application/pdf');
    await until(() => p.files().some((x) => x.startsWith(`${out.job.job_id}-`)), 20_000, 'spool file');
    const pdf = path.join(p.spool, p.files().find((x) => x.startsWith(`${out.job.job_id}-`))!);
    // A4 landscape (the image is wider than tall), and one image on it.
    assert.match(tool('pdfinfo', [pdf]), /Page size:\s+841\.89 x 595\.27\d* pts/);
    // One image (plus its alpha mask), scaled to fit the width inside the margins: 300 px over
    // (841.89 - 72) pt = 10.69 in, so about 28 pixels per inch.
    const rows = tool('pdfimages', ['-list', pdf]).trim().split('\n').slice(2).map((l) => l.trim().split(/\s+/));
    const images = rows.filter((r) => r[2] === 'image');
    assert.equal(images.length, 1);
    assert.equal(Math.round(Number(images[0]![12])), 28);
  });

  test('cancelling the call while it waits for completion cancels the job at the printer', async () => {
    const { fns } = await slowPrinter();
    const c = ctxFor(blobs.client, (pr, cx) => {
      if (pr.message?.includes('processing')) cx.controller.abort(new Error('cancelled by the test'));
    });
    await assert.rejects(call(fns, 'printer.print', { printer: 'slow', text: 'wait for me', wait: 'completed' }, c), /cancelled by the test/);
    const jobs = (await call(fns, 'printer.list_jobs', { printer: 'slow', which: 'all' }, ctxFor(blobs.client))) as { jobs: Job[] };
    assert.equal(jobs.jobs.length, 1);
    const seen = jobs.jobs[0]!.job_id;
    // ippeveprinter lets its print command finish before a cancel takes effect: until then it truthfully
    // reports the job processing with the reason processing-to-stop-point.
    const st = ((await call(fns, 'printer.job_status', { printer: 'slow', job_id: seen }, ctxFor(blobs.client))) as { job: Job }).job;
    assert.ok(st.state === 'canceled' || st.reasons.includes('processing-to-stop-point'), JSON.stringify(st));
  });

  test('a busy printer is retried, then device_busy', async () => {
    const { fns } = await slowPrinter();
    const first = (await call(fns, 'printer.print', { printer: 'slow', text: 'first' }, ctxFor(blobs.client))) as { job: Job };
    await until(async () => ((await call(fns, 'printer.job_status', { printer: 'slow', job_id: first.job.job_id }, ctxFor(blobs.client))) as { job: Job }).job.state === 'processing', 20_000, 'first job processing');
    const t0 = Date.now();
    const e = await failsWith(call(fns, 'printer.print', { printer: 'slow', text: 'second' }, ctxFor(blobs.client)), 'device_busy', 'busy');
    assert.equal(e.details?.['ipp_status'], 'server-error-busy');
    assert.ok(Date.now() - t0 >= 500, 'it was retried before giving up');
  });

  test('the printer killed mid-job: the waiting call ends device_unavailable with the job it had', async () => {
    const { p, fns } = await slowPrinter();
    const c = ctxFor(blobs.client, (pr) => {
      if (pr.message?.includes('processing')) void p.kill('SIGKILL');
    });
    const e = await failsWith(call(fns, 'printer.print', { printer: 'slow', text: 'doomed', wait: 'completed' }, c), 'device_unavailable');
    assert.ok(typeof e.details?.['job_id'] === 'number');
    assert.equal(e.details?.['last_state'], 'processing');
    assert.equal(e.sideEffects, 'possible');
  });
});
