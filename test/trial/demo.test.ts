/** Issue #30, out of the box: the demo (the QA demo) enables the diagnostics functions the trial needs, old demos included. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import YAML from 'yaml';
import { prepareDemo } from '../../src/cli/commands/demo.js';
import { tempDir } from '../helpers/stack.js';

test('the demo agent has handlers.diagnostics.enabled, and an older demo gets it on its next start', () => {
  const dir = tempDir();
  try {
    const { agentConfig } = prepareDemo(dir, 8799);
    const read = () => YAML.parse(readFileSync(agentConfig, 'utf8')) as { handlers?: { diagnostics?: { enabled?: boolean } } };
    assert.equal(read().handlers?.diagnostics?.enabled, true);
    const { handlers: _h, ...old } = read() as Record<string, unknown>;
    writeFileSync(agentConfig, YAML.stringify(old));
    prepareDemo(dir, 8799);
    assert.equal(read().handlers?.diagnostics?.enabled, true);
    // A config that says otherwise is left alone.
    writeFileSync(agentConfig, YAML.stringify({ ...old, handlers: { diagnostics: { enabled: false } } }));
    prepareDemo(dir, 8799);
    assert.equal(read().handlers?.diagnostics?.enabled, false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
