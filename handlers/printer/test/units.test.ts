/**
 * Unit tests of the printer handler's logic without a peer: the IPP codec, grants, option checks, the
 * Windows command building and output parsing (no Windows here), page counting, the prompt sentences and
 * the descriptors. The real integrations are tested against real peers in the other files.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeMessage, encodeMessage, IppDecodeError, plainAttributes, v, type IppMessage } from '../ipp/codec.js';
import { statusName } from '../ipp/names.js';
import { statusFault } from '../ipp/client.js';
import { findGrant, normalizeGrant } from '../grants.js';
import { checkOptions } from '../print-job.js';
import { countPdfPages, hardWrap, mediaSizePoints, textToPdf } from '../convert.js';
import { describePrint, render } from '../describe.js';
import { parseSettings } from '../printers.js';
import { CANCEL_SCRIPT, JOBS_SCRIPT, RAW_SCRIPT, WindowsBackend, jobStateOf, parseJobs, parsePrinters, type PsRunner } from '../windows.js';
import { PrinterFault } from '../model.js';
import en from '../i18n/en.json' with { type: 'json' };
import zh from '../i18n/zh-CN.json' with { type: 'json' };
import { makeFns, makePdf } from './harness.js';

test('codec: a message with every syntax survives encode → decode', () => {
  const m: IppMessage = {
    version: { major: 2, minor: 0 },
    code: 0x0002,
    requestId: 7,
    groups: [
      { group: 'operation', attributes: [{ name: 'attributes-charset', values: [v.charset('utf-8')] }, { name: 'job-name', values: [v.name('发票 invoice')] }] },
      {
        group: 'job',
        attributes: [
          { name: 'copies', values: [v.int(2)] },
          { name: 'orientation-requested', values: [v.enum(4)] },
          { name: 'page-ranges', values: [v.range(1, 2), v.range(5, 5)] },
          { name: 'x-bool', values: [v.bool(true)] },
          { name: 'media-col', values: [v.collection([{ name: 'media-size', values: [v.collection([{ name: 'x-dimension', values: [v.int(21000)] }, { name: 'y-dimension', values: [v.int(29700)] }])] }, { name: 'media-type', values: [v.keyword('stationery')] }])] },
          { name: 'when', values: [{ tag: 'dateTime', value: '2026-12-01T12:00:00.000Z' }] },
          { name: 'res', values: [{ tag: 'resolution', value: { x: 600, y: 600, units: 'dpi' } }] },
          { name: 'gone', values: [{ tag: 'no-value' }] },
          { name: 'msg', values: [{ tag: 'textWithLanguage', value: 'bonjour', language: 'fr' }] },
        ],
      },
    ],
  };
  const buf = encodeMessage(m);
  assert.deepEqual(buf.subarray(0, 8), Buffer.from([2, 0, 0, 2, 0, 0, 0, 7]));
  const { message, dataOffset } = decodeMessage(Buffer.concat([buf, Buffer.from('%PDF-')]));
  assert.equal(dataOffset, buf.length, 'document data starts right after end-of-attributes');
  assert.deepEqual(message, m);
  assert.deepEqual(plainAttributes(message.groups[1]!.attributes)['media-col'], { 'media-size': { 'x-dimension': 21000, 'y-dimension': 29700 }, 'media-type': 'stationery' });
  assert.deepEqual(plainAttributes(message.groups[1]!.attributes)['page-ranges'], [{ lower: 1, upper: 2 }, { lower: 5, upper: 5 }]);
});

test('codec: truncated or malformed input is an IppDecodeError, never a crash or a wrong answer', () => {
  const buf = encodeMessage({ version: { major: 2, minor: 0 }, code: 0, requestId: 1, groups: [{ group: 'printer', attributes: [{ name: 'printer-name', values: [v.name('p')] }] }] });
  for (let n = 0; n < buf.length; n++) assert.throws(() => decodeMessage(buf.subarray(0, n)), IppDecodeError, `cut at ${n}`);
  const bad = Buffer.from(buf);
  bad[8 + 1] = 0x21; // printer-name declared as integer with a 1-octet value
  assert.throws(() => decodeMessage(bad), IppDecodeError);
});

test('status names and their wire errors', () => {
  assert.equal(statusName(0x0507), 'server-error-busy');
  assert.equal(statusName(0x0999), '0x0999');
  const r = (code: number) => ({ status: code, statusName: statusName(code), message: { version: { major: 2, minor: 0 }, code, requestId: 1, groups: [] } });
  const cases: [number, string][] = [
    [0x0401, 'permission_denied'], [0x040a, 'invalid_arguments'], [0x0506, 'device_unavailable'], [0x0507, 'device_busy'],
    [0x0504, 'device_unavailable'], [0x0500, 'execution_failed'], [0x0408, 'payload_too_large'],
  ];
  for (const [code, type] of cases) {
    const f = statusFault(r(code), 'take the job', 'h:631');
    assert.equal(f.type, type, statusName(code));
    assert.equal(f.details['ipp_status'], statusName(code));
  }
});

test('grants: aliases, ids, "*" covers queues but never URIs', () => {
  const grants = ['q1', { alias: 'front-desk', printer: 'IPP://Printer.LAN:631/ipp/print' }, { alias: 'labels', printer: 'socket://127.0.0.1:9100', ask: 'always' as const }].map(normalizeGrant);
  assert.deepEqual(findGrant(grants, 'front-desk'), { kind: 'printers', id: 'ipp://printer.lan:631/ipp/print', alias: 'front-desk' });
  assert.equal(findGrant(grants, 'ipp://printer.lan:631/ipp/print')?.alias, 'front-desk');
  assert.equal(findGrant(grants, 'labels')?.ask, 'always');
  assert.equal(findGrant(grants, 'q1')?.id, 'q1');
  assert.equal(findGrant(grants, 'q2'), undefined);
  const star = ['*'].map(normalizeGrant);
  assert.equal(findGrant(star, 'q2')?.id, 'q2');
  assert.equal(findGrant(star, 'socket://10.0.0.5:22'), undefined);
  assert.equal(findGrant(star, 'ipp://10.0.0.5/ipp/print'), undefined);
});

test('options are checked against what the printer lists, and only that', () => {
  const s = { document_formats: [], media: ['iso_a4_210x297mm'], sides: ['one-sided'], color_modes: ['monochrome', 'auto'], orientations: ['portrait'], copies: { min: 1, max: 9 }, page_ranges: false };
  assert.deepEqual(checkOptions({ copies: 2, media: 'iso_a4_210x297mm', color_mode: 'auto' }, s), []);
  const v2 = checkOptions({ copies: 10, media: 'na_letter_8.5x11in', sides: 'two-sided-long-edge', color_mode: 'color', orientation: 'landscape', page_ranges: [{ from: 3, to: 1 }] }, s);
  assert.deepEqual(v2.map((x) => x.pointer), ['/options/copies', '/options/media', '/options/sides', '/options/color_mode', '/options/orientation', '/options/page_ranges', '/options/page_ranges/0']);
  assert.match(v2[1]!.message, /iso_a4_210x297mm/);
  assert.deepEqual(checkOptions({ media: 'anything' }, { ...s, media: [] }), [], 'an unknown list does not refuse');
});

test('settings: defaults, and unknown keys named', () => {
  const s = parseSettings({}, {});
  assert.equal(s.maxDocumentBytes, 50 * 1024 * 1024);
  assert.equal(s.cupsServer, 'localhost:631');
  assert.equal(parseSettings({}, { CUPS_SERVER: 'print.lan:631' }).cupsServer, 'print.lan:631');
  assert.equal(parseSettings({}, { CUPS_SERVER: '/run/cups/cups.sock' }).cupsServer, 'localhost:631');
  assert.throws(() => parseSettings({ max_doc: 1 }), /unknown key "max_doc"/);
  assert.throws(() => parseSettings({ max_document_bytes: -1 }), /max_document_bytes/);
});

test('windows: Get-Printer output parsed (one object or an array), states mapped', () => {
  const one = parsePrinters('{"Name":"Front Desk","DriverName":"HP Universal","PortName":"IP_10.0.0.9","PrinterStatus":5,"Location":"Lobby","Shared":false,"Default":true}');
  assert.deepEqual(one, [{ id: 'Front Desk', name: 'Front Desk', make_and_model: 'HP Universal', location: 'Lobby', state: 'stopped', reasons: ['media-empty'], is_default: true, kind: 'windows' }]);
  const many = parsePrinters('[{"Name":"A","PrinterStatus":0,"Default":false},{"Name":"B","PrinterStatus":1,"Default":false}]');
  assert.deepEqual(many.map((p) => [p.name, p.state, p.reasons]), [['A', 'idle', []], ['B', 'stopped', ['paused']]]);
  assert.deepEqual(parsePrinters(''), []);
  assert.deepEqual(jobStateOf(0x10), { state: 'processing', reasons: [] });
  assert.deepEqual(jobStateOf(0x1), { state: 'pending-held', reasons: [] });
  assert.deepEqual(jobStateOf(0x40 | 0x10), { state: 'processing-stopped', reasons: ['media-empty'] });
  assert.deepEqual(jobStateOf(0x1000), { state: 'completed', reasons: [] });
  assert.deepEqual(jobStateOf(0x100), { state: 'canceled', reasons: [] });
  assert.deepEqual(parseJobs('{"Id":12,"DocumentName":"invoice.pdf","JobStatus":16,"PagesPrinted":1,"TotalPages":3,"SubmittedTime":"2026-12-01T10:00:00.0000000Z"}'), [
    { job_id: 12, state: 'processing', reasons: [], name: 'invoice.pdf', pages_completed: 1, created_at: '2026-12-01T10:00:00.0000000Z' },
  ]);
});

test('windows: names, paths and job ids reach PowerShell only through the environment', async () => {
  const seen: { script: string; env: Record<string, string> }[] = [];
  const run: PsRunner = async (script, env) => {
    seen.push({ script, env });
    return script === RAW_SCRIPT ? '42\r\n' : '';
  };
  const evil = "Front'; Remove-Item -Recurse C:\\ ; '";
  const b = new WindowsBackend(evil, run);
  const job = await b.submit({ file: 'C:\\tmp\\doc', size: 3, format: 'application/octet-stream', options: { job_name: 'label' }, raw: true, user: 'u' }, AbortSignal.timeout(1000));
  assert.equal(job.job_id, 42);
  await b.jobs('all', 10, AbortSignal.timeout(1000));
  await b.cancel(42, AbortSignal.timeout(1000));
  assert.deepEqual(seen.map((s) => s.script), [RAW_SCRIPT, JOBS_SCRIPT, CANCEL_SCRIPT]);
  assert.deepEqual(seen[0]!.env, { AIOS_PRINTER: evil, AIOS_FILE: 'C:\\tmp\\doc', AIOS_JOBNAME: 'label' });
  assert.deepEqual(seen[2]!.env, { AIOS_PRINTER: evil, AIOS_JOB: '42' });
  for (const s of seen) assert.ok(!s.script.includes('Front'), 'the name is never spliced into a script');
  assert.match(RAW_SCRIPT, /pDataType = "RAW"/);
  assert.match(RAW_SCRIPT, /\[AiosRaw\]::Send\(\$env:AIOS_PRINTER, \$env:AIOS_FILE, \$env:AIOS_JOBNAME\)/);
  await assert.rejects(b.submit({ file: 'x', size: 1, format: 'application/pdf', options: {}, raw: false, user: 'u' }, AbortSignal.timeout(1000)), (e: unknown) => e instanceof PrinterFault && e.type === 'device_unavailable' && e.details['reason'] === 'no_pdf_path');
  const missing = new WindowsBackend('x', () => Promise.reject(Object.assign(new Error('spawn powershell.exe ENOENT'), { code: 'ENOENT' })));
  await assert.rejects(missing.describe(AbortSignal.timeout(1000)), (e: unknown) => e instanceof PrinterFault && e.details['reason'] === 'not_installed');
});

test('PDF page counting and media sizes', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aios-printer-unit-'));
  const pdf = path.join(dir, 'three.pdf');
  await makePdf(pdf, 3);
  assert.equal(countPdfPages(fs.readFileSync(pdf)), 3);
  assert.equal(countPdfPages(Buffer.from('not a pdf')), undefined);
  assert.deepEqual(mediaSizePoints('na_letter_8.5x11in'), [612, 792]);
  assert.deepEqual(mediaSizePoints('iso_a4_210x297mm').map(Math.round), [595, 842]);
  assert.deepEqual(mediaSizePoints(undefined), [612, 792]);
  const wrapped = hardWrap('短'.repeat(700) + '\nok');
  assert.deepEqual(wrapped.split('\n').map((l) => l.length), [300, 300, 100, 2]);
  // Without a font that covers it, Chinese text is refused rather than printed as boxes.
  await assert.rejects(textToPdf('发票', path.join(dir, 'x.pdf'), { font: path.join(dir, 'no-such-font.ttf') }), (e: unknown) => e instanceof PrinterFault && e.details['reason'] === 'no_font');
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the prompt: "Print invoice.pdf (3 pages, 2 copies) on front-desk", in both catalogues', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aios-printer-unit-'));
  const pdf = path.join(dir, 'invoice.pdf');
  await makePdf(pdf, 3);
  const data = fs.readFileSync(pdf).toString('base64');
  const m = describePrint({ data, document_name: 'invoice.pdf', copies: 2 }, 'front-desk');
  assert.equal(render(en, m), 'Print invoice.pdf (3 pages, 2 copies) on front-desk');
  assert.equal(render(zh, m), '在 front-desk 上打印 invoice.pdf（3 页，2 份）');
  const blob = describePrint({ blob: { size: 1_234_567, media_type: 'application/pdf' } }, 'q1');
  assert.equal(render(en, blob), 'Print document.pdf (1.2 MB, 1 copy) on q1');
  assert.deepEqual(Object.keys(en).sort(), Object.keys(zh).sort(), 'both catalogues have the same keys');
  const fns = await makeFns([{ alias: 'front-desk', printer: 'ipp://127.0.0.1:1/ipp/print' }]);
  const d = await fns.get('printer.print')!.describe!({ printer: 'front-desk', data, document_name: 'invoice.pdf', options: { copies: 2 } }, [{ kind: 'printers', id: 'ipp://127.0.0.1:1/ipp/print', label: 'front-desk' }]);
  assert.equal(typeof d === 'string' ? d : render(en, { key: d.key, params: d.params as Record<string, string | number> }), 'Print invoice.pdf (3 pages, 2 copies) on front-desk');
  fs.rmSync(dir, { recursive: true, force: true });
});

test('descriptors: ids, levels, and every input schema closed', async () => {
  const fns = await makeFns([]);
  const levels = Object.fromEntries([...fns.values()].map((f) => [f.descriptor.id, f.descriptor.permission_level]));
  assert.deepEqual(levels, {
    'printer.cancel_job': 'high', 'printer.get_attributes': 'low', 'printer.job_status': 'low', 'printer.list': 'low',
    'printer.list_jobs': 'low', 'printer.print': 'high', 'printer.print_raw': 'high',
  });
  for (const f of fns.values()) {
    assert.equal(f.descriptor.capability_type, 'print');
    assert.equal((f.descriptor.input_schema as { additionalProperties?: boolean }).additionalProperties, false);
  }
});
