/** The manifest matches its folder and the code: same ids, same permission levels and confirmation. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { makeFns, makeWorld } from './harness.js';
import handler from '../index.js';

const dir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

test('tool.id is the folder name and the handler name', () => {
  const y = parse(fs.readFileSync(path.join(dir, 'tool.aios.yaml'), 'utf8')) as { tool: { id: string } };
  assert.equal(y.tool.id, path.basename(dir));
  assert.equal(handler.name, path.basename(dir));
});

test('manifest capabilities and permissions match the descriptors', async () => {
  const y = parse(fs.readFileSync(path.join(dir, 'tool.aios.yaml'), 'utf8')) as {
    capabilities: { id: string; confirmation: string; permission: string }[];
  };
  const w = await makeWorld();
  try {
    const fns = await makeFns(w);
    assert.deepEqual(y.capabilities.map((c) => c.id).sort(), [...fns.keys()].sort());
    // The manifest is generated from the code (test/sdk/manifests.test.ts); this checks the result reads right.
    for (const c of y.capabilities) {
      assert.equal(fns.get(c.id)!.descriptor.permission_level, c.permission, c.id);
      assert.equal(fns.get(c.id)!.descriptor.confirmation, c.confirmation, c.id);
    }
  } finally {
    await w.cleanup();
  }
});

test('the handler imports only the SDK entry from src/', () => {
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
    const text = fs.readFileSync(path.join(dir, f), 'utf8');
    for (const m of text.matchAll(/from '(\.\.\/\.\.\/src\/[^']+)'/g)) assert.equal(m[1], '../../src/sdk/index.js', `${f} imports ${m[1]}`);
  }
});
