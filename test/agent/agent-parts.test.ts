/**
 * The agent builds no consent gate, grant store or function switches of its own (issue 29 §1): the
 * composition root passes them in, and an Agent built without them is refused, naming what is missing,
 * before it opens anything in the data folder.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Agent, type AgentOptions } from '../../src/agent/agent.js';
import { normalizeAgentConfig } from '../../src/config/agent-config.js';

test('an Agent built without its consent gate, grants and function switches is refused, naming them, and opens nothing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'aios-agent-parts-'));
  try {
    const config = normalizeAgentConfig({ data_dir: join(dir, 'data'), identity: { workspace_id: 'ws', user_id: 'usr', device_id: 'dev' } });
    const log = pino({ level: 'silent' });
    assert.throws(
      () => new Agent(config, { log } as Partial<AgentOptions> as AgentOptions),
      (e: Error) => e instanceof TypeError && /consent, grants, functions/.test(e.message),
    );
    assert.equal(existsSync(join(dir, 'data')) ? readdirSync(join(dir, 'data')).length : 0, 0, 'no journal, grants or settings file was opened');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
