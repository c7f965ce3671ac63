/**
 * The runtime token stays out of the process list (issue 13, Low 11): `invoke` reads it from a file,
 * stdin or the environment; `--token` still works but warns.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CLI, ROOT, cliRun, ids, inProcessStack } from '../helpers/stack.js';

describe('invoke without the token in argv', () => {
  let s: Awaited<ReturnType<typeof inProcessStack>>;
  before(async () => {
    s = await inProcessStack();
  });
  after(() => s?.stop());
  const common = () => ['invoke', 'diagnostics.echo', '--args', '{"value":1}', '--bridge', s.url, '--workspace', ids.workspace_id, '--device', ids.device_id];

  test('--token-file <file> works and prints no warning', async () => {
    const f = join(s.dir, 'rt');
    writeFileSync(f, s.tokens.runtime + '\n', { mode: 0o600 });
    const r = await cliRun([...common(), '--token-file', f]);
    assert.equal(r.code, 0, r.err);
    assert.doesNotMatch(r.err, /warning/);
  });

  test('--token-file - reads stdin', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...common(), '--token-file', '-'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdin.end(s.tokens.runtime + '\n');
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    assert.equal(code, 0, err);
  });

  test('--token still works but warns that the process list shows it', async () => {
    const r = await cliRun([...common(), '--token', s.tokens.runtime]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.err, /--token puts the runtime token in the process list/);
    assert.ok(!r.err.includes(s.tokens.runtime) && !r.out.includes(s.tokens.runtime), 'the token is not echoed');
  });
});
