/** The process logger: secrets are redacted; the per-call line (fixed fields) skips pino but lands in the same file, in pino's format. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { callLineWriter, createLogger, silentLogger } from '../../src/base/logger.js';
import type { Logger } from '../../src/sdk/index.js';
import { tempDir } from '../helpers/stack.js';

/** Call lines reach the destination at the end of the turn; then the destination is flushed. */
const flush = async (log: Logger) => {
  await Promise.resolve();
  await new Promise<void>((resolve, reject) => (log as unknown as { flush(cb: (e?: Error) => void): void }).flush((e) => (e ? reject(e) : resolve())));
};

test('redacted lines and per-call lines go to one file; a call line is the line pino would write', async () => {
  const dir = tempDir();
  try {
    const file = join(dir, 'agent.log');
    const log = createLogger({ level: 'info', file });
    log.info({ token: 'sekrit-token', args: { path: '/home/x' } }, 'something happened');
    const write = callLineWriter(log);
    const ok = { call_id: 'c1', function: 'diagnostics.echo', state: 'completed', duration_ms: 0 };
    const bad = { call_id: 'c"2\u00e9', function: 'files.read', state: 'failed', duration_ms: null, error_type: 'timeout' };
    write('info', ok, 'call finished');
    write('warn', bad, 'call finished');
    await Promise.resolve();
    // The same lines through pino itself, for comparison.
    log.info(ok, 'call finished');
    log.warn(bad, 'call finished');
    await flush(log);
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(lines.length, 5);
    assert.equal(lines[0]!['token'], '[redacted]');
    assert.equal(lines[0]!['args'], '[redacted]');
    assert.doesNotMatch(readFileSync(file, 'utf8'), /sekrit|\/home\/x/);
    const noTime = (l: Record<string, unknown>) => ({ ...l, time: typeof l['time'] });
    assert.deepEqual(Object.keys(lines[1]!), Object.keys(lines[3]!));
    assert.deepEqual(noTime(lines[1]!), noTime(lines[3]!));
    assert.deepEqual(noTime(lines[2]!), noTime(lines[4]!));
    assert.equal(lines[2]!['call_id'], 'c"2\u00e9');
    assert.equal(lines[2]!['level'], 40);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a call line respects the level, and any other logger gets it through its own methods', async () => {
  const dir = tempDir();
  try {
    const file = join(dir, 'agent.log');
    const log = createLogger({ level: 'warn', file });
    const write = callLineWriter(log);
    write('info', { call_id: 'c1', function: 'f.x', state: 'completed', duration_ms: 1 }, 'call finished');
    write('warn', { call_id: 'c2', function: 'f.x', state: 'failed', duration_ms: 1, error_type: 'timeout' }, 'call finished');
    await flush(log);
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(lines.map((l) => l['call_id']), ['c2']);
    const seen: unknown[] = [];
    const custom = { ...silentLogger(), info: (o: object, m?: string) => seen.push(['info', o, m]), warn: (o: object, m?: string) => seen.push(['warn', o, m]) } as unknown as Logger;
    callLineWriter(custom)('info', { call_id: 'c3', function: 'f.x', state: 'completed', duration_ms: 0 }, 'call finished');
    assert.deepEqual(seen, [['info', { call_id: 'c3', function: 'f.x', state: 'completed', duration_ms: 0 }, 'call finished']]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a line reaches the file in the turn it is logged, without an explicit flush', async () => {
  const dir = tempDir();
  try {
    const file = join(dir, 'agent.log');
    const log = createLogger({ level: 'info', file });
    log.info({ n: 1 }, 'one quiet line');
    callLineWriter(log)('info', { call_id: 'c1', function: 'f.x', state: 'completed', duration_ms: 0 }, 'call finished');
    assert.match(readFileSync(file, 'utf8'), /one quiet line/);
    await Promise.resolve();
    assert.match(readFileSync(file, 'utf8'), /"call_id":"c1"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('call lines still waiting when the process exits are written', async () => {
  const dir = tempDir();
  try {
    const file = join(dir, 'agent.log');
    const { spawnSync } = await import('node:child_process');
    const { pathToFileURL } = await import('node:url');
    const mod = pathToFileURL(join(import.meta.dirname, '../../src/base/logger.ts')).href;
    const code = `const { createLogger, callLineWriter } = await import(${JSON.stringify(mod)});
      const log = createLogger({ file: ${JSON.stringify(file)} });
      log.info({ n: 1 }, 'last words');
      callLineWriter(log)('info', { call_id: 'c9', function: 'f.x', state: 'completed', duration_ms: 0 }, 'call finished');
      process.exit(0);`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const text = readFileSync(file, 'utf8');
    assert.match(text, /last words/);
    assert.match(text, /"call_id":"c9"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('on stderr too, call lines logged just before the process exits are written, in order with other lines', async () => {
  const { spawnSync } = await import('node:child_process');
  const { pathToFileURL } = await import('node:url');
  const mod = pathToFileURL(join(import.meta.dirname, '../../src/base/logger.ts')).href;
  const code = `const { createLogger, callLineWriter } = await import(${JSON.stringify(mod)});
    const log = createLogger({});
    callLineWriter(log)('warn', { call_id: 'c1', function: 'f.x', state: 'failed', duration_ms: 0, error_type: 'timeout' }, 'call finished');
    log.error({ n: 2 }, 'after the call line');
    callLineWriter(log)('info', { call_id: 'c3', function: 'f.x', state: 'completed', duration_ms: 0 }, 'call finished');
    process.exit(3);`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8' });
  assert.equal(r.status, 3);
  const lines = r.stderr.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(lines.map((l) => l['call_id'] ?? l['msg']), ['c1', 'after the call line', 'c3']);
});

test('a log file that cannot be written (disk full) does not throw into the caller; it is said once on stderr', async () => {
  const { spawnSync } = await import('node:child_process');
  const { pathToFileURL } = await import('node:url');
  const { existsSync } = await import('node:fs');
  if (!existsSync('/dev/full')) return; // Linux only: /dev/full answers every write with ENOSPC.
  const mod = pathToFileURL(join(import.meta.dirname, '../../src/base/logger.ts')).href;
  const code = `const { createLogger } = await import(${JSON.stringify(mod)});
    const log = createLogger({ file: '/dev/full' });
    for (let i = 0; i < 2000; i++) log.info({ i }, 'a line that fills the 4 KiB block soon');
    process.stdout.write('still running');`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { encoding: 'utf8' });
  assert.equal(r.stdout, 'still running', r.stderr);
  assert.equal(r.stderr.match(/the log cannot be written/g)?.length, 1, r.stderr);
});
