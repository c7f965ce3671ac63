/** The manifest matches its folder and the code; only the glue touches the SDK. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { makeFns } from './harness.js';
import handler from '../index.js';

const dir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

test('tool.id is the folder name and the handler name', () => {
  const y = parse(fs.readFileSync(path.join(dir, 'tool.aios.yaml'), 'utf8')) as { tool: { id: string } };
  assert.equal(y.tool.id, path.basename(dir));
  assert.equal(handler.name, path.basename(dir));
});

test('manifest capabilities and permissions match the descriptors', async () => {
  const y = parse(fs.readFileSync(path.join(dir, 'tool.aios.yaml'), 'utf8')) as { capabilities: { id: string; confirmation: string; permission: string }[] };
  const fns = await makeFns([]);
  assert.deepEqual(y.capabilities.map((c) => c.id).sort(), [...fns.keys()].sort());
  for (const c of y.capabilities) assert.equal(fns.get(c.id)!.descriptor.permission_level, c.permission, c.id);
  for (const c of y.capabilities) assert.equal(fns.get(c.id)!.descriptor.confirmation, c.confirmation, c.id);
});

test('only the glue (index.ts, functions.ts) imports the SDK; codec, backends and conversion do not', () => {
  const files = [...fs.readdirSync(dir), ...fs.readdirSync(path.join(dir, 'ipp')).map((f) => `ipp/${f}`)].filter((n) => n.endsWith('.ts'));
  const users = files.filter((f) => /from '(\.\.\/)+src\//.test(fs.readFileSync(path.join(dir, f), 'utf8')));
  assert.deepEqual(users.sort(), ['functions.ts', 'index.ts']);
  for (const f of users) {
    for (const m of fs.readFileSync(path.join(dir, f), 'utf8').matchAll(/from '(\.\.\/\.\.\/src\/[^']+)'/g)) assert.equal(m[1], '../../src/sdk/index.js', `${f} imports ${m[1]}`);
  }
});
