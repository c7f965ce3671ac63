/**
 * The handler lifecycle in a real agent (startAgent, as `aios-device run` wires it): start-up sweeps the
 * calls' temp folder, a pause and a resume reach onPause/onResume (also a pause written by another
 * process, seen by the consent poll), and stopping the agent reaches dispose.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { normalizeAgentConfig } from '../../src/config/agent-config.js';
import { startAgent } from '../../src/app/start-agent.js';
import { silentLogger } from '../../src/base/logger.js';
import { openConsentDb } from '../../src/consent/db.js';
import { PauseState } from '../../src/consent/pause-state.js';
import { ids, tempDir, until } from '../helpers/stack.js';

/** A handler module with hooks that append to a file (the test reads it; no shared memory needed). */
function writeHookHandler(dir: string, log: string): void {
  mkdirSync(join(dir, 'hooky'), { recursive: true });
  const append = (what: string) => `() => { fs.appendFileSync(${JSON.stringify(log)}, '${what}\\n'); }`;
  writeFileSync(
    join(dir, 'hooky', 'index.ts'),
    `import fs from 'node:fs';\nexport default { name: 'hooky', create: () => ({ functions: [], dispose: ${append('dispose')}, onPause: ${append('pause')}, onResume: ${append('resume')} }) };\n`,
  );
}

test('start-up sweeps stale temp files; pause/resume (also from another process) and stop reach the hooks', async () => {
  const dir = tempDir('aios-lifecycle-');
  try {
    const handlers = join(dir, 'handlers');
    const hookLog = join(dir, 'hooks.log');
    writeHookHandler(handlers, hookLog);
    const dataDir = join(dir, 'agent');
    const stale = join(dataDir, 'tmp', 'calls', 'crashed-call-1234');
    mkdirSync(dataDir, { mode: 0o700 }); // a private data folder, as an earlier run of the agent left it
    mkdirSync(stale, { recursive: true, mode: 0o700 });
    writeFileSync(join(stale, 'left-behind.png'), 'x');
    const config = normalizeAgentConfig({ identity: { ...ids }, data_dir: dataDir, local_endpoint: { enabled: false } });
    const running = await startAgent(config, silentLogger(), { handlers: ['hooky'], handlersDir: handlers });
    const hooks = () => (existsSync(hookLog) ? readLines(hookLog) : []);
    try {
      assert.ok(!existsSync(stale), 'the stale temp folder was swept at start-up');
      assert.ok(existsSync(join(dataDir, 'tmp', 'calls')), 'the calls temp folder exists');
      assert.deepEqual(running.agent.handlerResults.map((r) => [r.name, r.error]), [['hooky', undefined]]);
      running.consent.pause('test');
      await until(() => hooks().includes('pause'), 10_000, 'onPause');
      running.consent.resume();
      await until(() => hooks().includes('resume'), 10_000, 'onResume');
      // `aios-device pause` in another process writes the consent database; the agent's poll sees it.
      const db = openConsentDb(dataDir);
      new PauseState(db).set(true, 'cli');
      db.close();
      await until(() => hooks().filter((h) => h === 'pause').length === 2, 10_000, 'onPause from another process');
    } finally {
      await running.stop();
    }
    assert.deepEqual(hooks(), ['pause', 'resume', 'pause', 'dispose']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

function readLines(file: string): string[] {
  return readFileSync(file, 'utf8').split('\n').filter(Boolean);
}
