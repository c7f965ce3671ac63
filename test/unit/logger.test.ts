/** The process logger: secrets are redacted; the per-call line (fixed fields) skips that pass but lands in the same file. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, fixedShapeLogger, silentLogger } from '../../src/agent/logger.js';
import { tempDir } from '../helpers/stack.js';

test('redacted lines and per-call lines go to one file; the fixed-shape logger of any other logger is itself', async () => {
  const dir = tempDir();
  try {
    const file = join(dir, 'agent.log');
    const log = createLogger({ level: 'info', file });
    log.info({ token: 'sekrit-token', args: { path: '/home/x' } }, 'something happened');
    const calls = fixedShapeLogger(log);
    assert.notEqual(calls, log);
    calls.info({ call_id: 'c1', function: 'diagnostics.echo', state: 'completed', duration_ms: 0 }, 'call finished');
    await new Promise<void>((resolve, reject) => (log as unknown as { flush(cb: (e?: Error) => void): void }).flush((e) => (e ? reject(e) : resolve())));
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines.length, 2);
    assert.equal(lines[0]!['token'], '[redacted]');
    assert.equal(lines[0]!['args'], '[redacted]');
    assert.doesNotMatch(readFileSync(file, 'utf8'), /sekrit|\/home\/x/);
    assert.equal(lines[1]!['call_id'], 'c1');
    assert.equal(lines[1]!['msg'], 'call finished');
    assert.equal(lines[1]!['pid'], process.pid);
    const silent = silentLogger();
    assert.equal(fixedShapeLogger(silent), silent);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
