import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { summarize, redactArgs, looksSecret } from '../../src/consent/redact.js';
import { openConsent } from '../../src/app/consent-parts.js';
import { createControlMethods } from '../../src/consent/control-api.js';
import { CONTROL_EVENTS } from '../../src/consent/control-events.js';
import type { PromptView } from '../../src/consent/prompt.js';
import type { Outcome } from '../../src/protocol/messages.js';
import { descriptor, request, tempDir } from './helpers.js';

const SECRET = 'sk_live_9fJ2kLq8ZxR4vT7mW1nB5cY3hD6gP0aE';
const CONTENT = 'Dear Bob, the quarterly numbers are confidential: 4.2M.';
const B64 = Buffer.from('%PDF-1.7 confidential binary content here, quite long').toString('base64');

test('summaries keep shapes, numbers, booleans and paths, and nothing else', () => {
  const s = summarize({
    path: '/srv/out/report.docx',
    name: 'report.docx',
    content: CONTENT,
    data: B64,
    api_token: SECRET,
    headers: { Authorization: 'Bearer abc', 'X-Trace': 'hello there' },
    overwrite: true,
    size: 14_000,
    note: 'free text the user typed',
    blob: B64,
    lines: ['one', 'two'],
  });
  assert.deepEqual(s, {
    path: '/srv/out/report.docx',
    name: 'report.docx',
    content: `<string:${CONTENT.length}>`,
    data: `<string:${B64.length}>`,
    api_token: '<redacted>',
    headers: { Authorization: '<redacted>', 'X-Trace': '<string:11>' },
    overwrite: true,
    size: 14000,
    note: '<string:24>',
    blob: `<string:${B64.length}>`,
    lines: ['<string:3>', '<string:3>'],
  });
});

test('secret-looking path segments and URLs with queries are withheld', () => {
  assert.equal(summarize('/tmp/uploads/' + SECRET + '/a.txt'), '/tmp/uploads/<redacted>/a.txt');
  assert.equal(summarize('https://x.example/?token=abc'), '<string:28>');
  assert.equal(looksSecret(SECRET), true);
  assert.equal(looksSecret('report-final-2024.docx'), false);
  assert.equal(redactArgs(undefined), null);
});

test('no secret or file content reaches the database or the log after calls that carried them', async () => {
  const t = tempDir();
  const logFile = path.join(t.dir, 'agent.log');
  const log = pino({ level: 'debug' }, pino.destination({ dest: logFile, sync: true }));
  const svc = openConsent(
    { data_dir: path.join(t.dir, 'data'), confirmations: { provider: 'ui' } },
    { log, notify: () => {} },
  );
  const api = createControlMethods(svc);
  try {
    const args = { path: '/srv/out/notes.txt', content: CONTENT, data: B64, token: SECRET, options: { password: SECRET } };
    const d = descriptor('files.write_text', 'high');
    const req = request(d, { args });
    const shown = new Promise<PromptView>((r) => svc.events.once(CONTROL_EVENTS.prompt, r));
    const decided = svc.gate.decide(req, new AbortController().signal);
    await api['control.prompts.answer']!({ prompt_id: (await shown).prompt_id, answer: 'allow_remember', scope: 'always' }, { authenticated: true });
    const decision = await decided;
    const now = new Date().toISOString();
    const outcome: Outcome = {
      call_id: req.callId, function: d.id, state: 'completed', output: { written: 56 }, output_valid: true, error: null,
      replayed: false, accepted_at: now, started_at: now, finished_at: now, duration_ms: 12, confirmation: decision.confirmation,
    };
    svc.trail.onFinished({ outcome, descriptor: d, args, requester: req.requester, workspaceId: 'ws_demo', userId: 'usr_demo' });
    const failed: Outcome = {
      ...outcome, call_id: 'call-x', state: 'failed', output: undefined,
      error: { code: -41040, type: 'execution_failed', message: 'The handler failed.', retryable: false, side_effects: 'possible' },
    };
    svc.trail.onFinished({ outcome: failed, descriptor: d, args, requester: req.requester, workspaceId: 'ws_demo', userId: 'usr_demo' });

    const rows = svc.audit.list();
    assert.equal(rows.length, 2);
    assert.deepEqual(
      [rows[1]!.state, rows[1]!.decision, rows[1]!.decided_by, rows[1]!.remembered, rows[1]!.requester_name, rows[1]!.duration_ms],
      ['completed', 'allowed', 'user', true, 'Front-desk assistant', 12],
    );
    assert.equal(rows[0]!.error_type, 'execution_failed');
    assert.equal((rows[1]!.args_summary as { path: string }).path, '/srv/out/notes.txt');
  } finally {
    svc.close();
    log.flush();
  }
  try {
    const files = [logFile, ...fs.readdirSync(path.join(t.dir, 'data')).map((f) => path.join(t.dir, 'data', f))];
    assert.ok(files.some((f) => f.endsWith('consent.sqlite')));
    assert.ok(fs.readFileSync(logFile, 'utf8').includes('call audited'), 'the log does record the call');
    for (const f of files) {
      const bytes = fs.readFileSync(f);
      for (const needle of [SECRET, CONTENT, B64, 'quarterly']) {
        assert.equal(bytes.includes(Buffer.from(needle)), false, `${path.basename(f)} must not contain ${needle.slice(0, 12)}…`);
      }
    }
  } finally {
    t.cleanup();
  }
});
