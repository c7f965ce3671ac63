/**
 * The consent CLI commands as a user runs them (a child process), against the same database a
 * running agent's consent pieces hold open.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import fs from 'node:fs';
import path from 'node:path';
import { openConsent } from '../../src/app/consent-parts.js';
import type { Outcome } from '../../src/protocol/messages.js';
import { descriptor, request, tempDir } from './helpers.js';

const run = promisify(execFile);
const CLI = path.resolve(import.meta.dirname, 'fixtures', 'cli.ts');
const cli = (...args: string[]) => run(process.execPath, ['--import', 'tsx', CLI, ...args], { encoding: 'utf8' });

function outcome(callId: string, fn: string, state: Outcome['state'], errorType?: string): Outcome {
  const now = new Date().toISOString();
  return {
    call_id: callId, function: fn, state, error: errorType
      ? { code: -41011, type: errorType as 'user_rejected', message: 'x', retryable: false, side_effects: 'none' }
      : null,
    replayed: false, accepted_at: now, started_at: now, finished_at: now, duration_ms: 5,
    confirmation: { required: false, decision: 'not_required', decided_by: 'policy', remembered: false },
  };
}

test('pause and resume from the CLI reach the running service on its next call', async () => {
  const t = tempDir();
  const svc = openConsent({ data_dir: t.dir, confirmations: { provider: 'none' } });
  try {
    const { stdout } = await cli('pause', '--data-dir', t.dir);
    assert.match(stdout, /Paused/);
    const r = await svc.gate.decide(request(descriptor('device.info', 'public')), new AbortController().signal);
    assert.equal(r.error?.type, 'paused');
    assert.deepEqual([svc.status().paused, svc.status().paused_by], [true, 'cli']);
    await cli('resume', '--data-dir', t.dir);
    assert.equal((await svc.gate.decide(request(descriptor('device.info', 'public')), new AbortController().signal)).error, undefined);
  } finally {
    svc.close();
    t.cleanup();
  }
});

test('decisions list / revoke and grants, with the data dir read from --config', async () => {
  const t = tempDir();
  const svc = openConsent({ data_dir: path.join(t.dir, 'data'), confirmations: { provider: 'none' } });
  const config = path.join(t.dir, 'agent.yaml');
  fs.writeFileSync(config, 'data_dir: ./data\ngrants:\n  serial: [ /dev/ttyUSB0 ]\n');
  try {
    const a = svc.decisions.remember({ userId: 'usr_demo', functionId: 'serial.request', resource: 'serial:/dev/ttyUSB0', effect: 'allow', scope: 'always' });
    svc.decisions.remember({ userId: 'usr_demo', functionId: 'camera.capture', resource: '*', effect: 'deny', scope: 'always' });
    const list = await cli('decisions', '--config', config);
    assert.match(list.stdout, /allow\s+serial\.request\s+serial:\/dev\/ttyUSB0\s+always/);
    assert.match(list.stdout, /deny\s+camera\.capture/);
    const grants = await cli('grants', '--config', config, '--json');
    const g = JSON.parse(grants.stdout) as { configured: { serial: string[] }; user: { added: unknown[] }; remembered: { function_id: string }[] };
    assert.deepEqual(g.user, { added: [], removed: [] }, 'no changes by the user yet');
    assert.deepEqual(g.configured.serial, ['/dev/ttyUSB0']);
    assert.deepEqual(g.remembered.map((x) => x.function_id), ['serial.request'], 'grants lists allows only');

    assert.equal(svc.gate.needsPrompt(request(descriptor('serial.request', 'high'), { resource: 'serial:/dev/ttyUSB0' })), false);
    const rv = await cli('decisions', 'revoke', String(a.id), '--config', config);
    assert.match(rv.stdout, /Revoked decision/);
    // The running service sees the revoke on the very next call: no remembered allow, so it would ask.
    const next = await svc.gate.decide(request(descriptor('serial.request', 'high'), { resource: 'serial:/dev/ttyUSB0' }), new AbortController().signal);
    assert.equal(next.error?.type, 'confirmation_unavailable');
    await assert.rejects(cli('decisions', 'revoke', '9999', '--config', config), (e: { stderr: string; code: number }) => /No remembered decision/.test(e.stderr) && e.code === 1);
  } finally {
    svc.close();
    t.cleanup();
  }
});

test('activity shows the audit trail with filters, as a table or JSON', async () => {
  const t = tempDir();
  const svc = openConsent({ data_dir: t.dir, confirmations: { provider: 'none' } });
  try {
    const who = { kind: 'agent', name: 'Front-desk assistant' };
    svc.trail.onFinished({ outcome: outcome('c1', 'device.info', 'completed'), descriptor: undefined, args: {}, requester: who, workspaceId: 'ws', userId: 'u' });
    svc.trail.onFinished({ outcome: outcome('c2', 'camera.capture', 'rejected', 'user_rejected'), descriptor: undefined, args: { camera: 'front' }, requester: who, runtime: { id: 'rt_front', name: 'Front desk' }, workspaceId: 'ws', userId: 'u' });
    svc.trail.onFinished({ outcome: { ...outcome('c1', 'device.info', 'completed'), replayed: true }, descriptor: undefined, args: {}, requester: who, workspaceId: 'ws', userId: 'u' });

    const table = await cli('activity', '--data-dir', t.dir);
    assert.match(table.stdout, /FINISHED\s+CALL\s+FUNCTION\s+ON\s+RUNTIME\s+REQUESTER\s+STATE/);
    // The call id, and the runtime the bridge attested (protocol 1.2) beside the requester it claims; unverified without one.
    assert.match(table.stdout, /c2\s+camera\.capture\s+-\s+Front desk \(rt_front\)\s+Front-desk assistant \(agent\)\s+rejected/);
    assert.match(table.stdout, /c1\s+device\.info\s+-\s+unverified\s+Front-desk assistant \(agent\)\s+completed/);
    assert.equal(table.stdout.trim().split('\n').length, 3, 'a replayed outcome is not a second call');

    const json = JSON.parse((await cli('activity', '--data-dir', t.dir, '--state', 'rejected', '--json')).stdout) as { call_id: string; error_type: string }[];
    assert.deepEqual(json.map((r) => [r.call_id, r.error_type]), [['c2', 'user_rejected']]);
    assert.deepEqual(json.map((r) => [(r as unknown as Record<string, unknown>)['runtime_id'], (r as unknown as Record<string, unknown>)['runtime_name']]), [['rt_front', 'Front desk']]);
    const byFn = JSON.parse((await cli('activity', '--data-dir', t.dir, '--function', 'device.info', '--json')).stdout) as unknown[];
    assert.equal(byFn.length, 1);
    const future = JSON.parse((await cli('activity', '--data-dir', t.dir, '--since', '2999-01-01T00:00:00Z', '--json')).stdout) as unknown[];
    assert.equal(future.length, 0);
    const recent = JSON.parse((await cli('activity', '--data-dir', t.dir, '--since', '1h', '--limit', '1', '--json')).stdout) as unknown[];
    assert.equal(recent.length, 1);
  } finally {
    svc.close();
    t.cleanup();
  }
});
