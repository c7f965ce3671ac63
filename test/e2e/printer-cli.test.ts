/**
 * The printer handler through the CLI-started bridge and agent (separate processes) on a real
 * ippeveprinter and an AppSocket listener: a PDF uploaded with `invoke --blob` arrives at the printer
 * byte for byte, raw ZPL arrives unchanged, outputs pass their schemas, an ungranted printer is refused
 * and the agent's log holds no document content.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { join } from 'node:path';
import { cliRun, processStack, tempDir } from '../helpers/stack.js';
import { startIppEve, startSocketPrinter, until, type IppEve, type SocketPrinter } from '../../handlers/printer/test/peers.js';
import { makePdf, sha } from '../../handlers/printer/test/harness.js';

type Stack = Awaited<ReturnType<typeof processStack>>;

describe('printer.* through the CLI-started bridge and agent', () => {
  let s: Stack;
  let p: IppEve;
  let label: SocketPrinter;
  before(async () => {
    [p, label] = await Promise.all([startIppEve(), startSocketPrinter()]);
    s = await processStack({
      agent: {
        grants: { printers: [{ alias: 'front-desk', printer: p.uri }, { alias: 'labels', printer: label.uri }] },
        // The administrator pre-allows printing on this QA box (high-risk functions otherwise ask).
        policy: { 'printer.print': 'allow', 'printer.print_raw': 'allow' },
        confirmations: { provider: 'none' },
        handlers: { printer: { poll_ms: 100 } },
      },
    });
  });
  after(async () => {
    await s?.stop();
    await Promise.all([p?.stop(), label?.close()]);
  });

  test('printer.list shows the granted printer; its output is valid', async () => {
    const o = (await s.client.call('printer.list', {})).record.outcome!;
    assert.equal(o.state, 'completed', JSON.stringify(o.error));
    assert.equal(o.output_valid, true);
    const printers = (o.output as { printers: { id: string; alias?: string; make_and_model?: string }[] }).printers;
    const desk = printers.find((x) => x.alias === 'front-desk');
    assert.equal(desk?.id, p.uri);
    assert.equal(desk?.make_and_model, 'Example Printer');
  });

  test('a PDF uploaded with invoke --blob is printed and arrives byte-identical', async () => {
    const dir = tempDir();
    const pdf = join(dir, 'invoice.pdf');
    await makePdf(pdf, 3, 300_000);
    const before = p.files().length;
    const common = ['--bridge', s.url, '--token', s.tokens.runtime, '--workspace', 'ws_t', '--device', 'dev_t'];
    const r = await cliRun(['invoke', 'printer.print', '--args', JSON.stringify({ printer: 'front-desk', document_name: 'invoice.pdf', wait: 'completed', options: { copies: 2 } }), '--blob', `blob=${pdf};type=application/pdf`, ...common]);
    assert.equal(r.code, 0, r.out + r.err);
    assert.match(r.out, /"state": ?"completed"/);
    await until(() => p.files().length > before, 20_000, 'spool file');
    assert.equal(sha(join(p.spool, p.files().at(-1)!)), sha(pdf));
    assert.ok(!s.agentLog().includes('Page 1'), 'no document content in the agent log');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('raw ZPL to the AppSocket printer arrives unchanged', async () => {
    const zpl = Buffer.from('^XA^FO20,20^A0N,30,30^FDe2e label^FS^XZ');
    const got = label.next();
    const o = (await s.client.call('printer.print_raw', { printer: 'labels', data: zpl.toString('base64'), encoding: 'base64' })).record.outcome!;
    assert.equal(o.state, 'completed', JSON.stringify(o.error));
    assert.equal(o.output_valid, true);
    assert.equal((o.output as { job: { state: string } }).job.state, 'sent');
    assert.deepEqual(await got, zpl);
  });

  test('a printer that is not granted is rejected with permission_denied before any prompt, and nothing is sent', async () => {
    const before = p.files().length;
    const o = (await s.client.call('printer.print', { printer: 'ipp://127.0.0.1:1/ipp/print', text: 'no' })).record.outcome!;
    assert.equal(o.state, 'rejected');
    assert.equal(o.error?.type, 'permission_denied');
    assert.equal(o.error?.side_effects, 'none');
    assert.equal(p.files().length, before);
  });
});
