/** The manifest matches its folder and the code; the catalogues hold the same keys; the handler imports only the SDK from src/. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import handler from '../index.js';
import { createTestHost } from '../../../src/kit/testing.js';

const dir = path.dirname(import.meta.dirname);

test('tool.id is the folder name; capabilities and levels match the descriptors', async () => {
  const y = parse(fs.readFileSync(path.join(dir, 'tool.aios.yaml'), 'utf8')) as { tool: { id: string }; capabilities: { id: string; confirmation: string; permission: string }[] };
  assert.equal(y.tool.id, 'serial');
  assert.equal(handler.name, 'serial');
  const host = await createTestHost(handler, { grants: { serial: ['/dev/ttyUSB0'] } });
  const fns = new Map(host.handler.functions.map((d) => [d.descriptor.id, d]));
  await host.close();
  assert.deepEqual(y.capabilities.map((c) => c.id).sort(), [...fns.keys()].sort());
  for (const c of y.capabilities) assert.equal(fns.get(c.id)!.descriptor.permission_level, c.permission, c.id);
  for (const c of y.capabilities) assert.equal(fns.get(c.id)!.descriptor.confirmation, c.confirmation, c.id);
});

test('en and zh-CN catalogues have the same keys, all namespaced serial.*, with the same placeholders', () => {
  const en = JSON.parse(fs.readFileSync(path.join(dir, 'i18n', 'en.json'), 'utf8')) as Record<string, string>;
  const zh = JSON.parse(fs.readFileSync(path.join(dir, 'i18n', 'zh-CN.json'), 'utf8')) as Record<string, string>;
  assert.deepEqual(Object.keys(zh).sort(), Object.keys(en).sort());
  const holes = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
  for (const k of Object.keys(en)) {
    assert.match(k, /^serial\./);
    assert.deepEqual(holes(zh[k]!), holes(en[k]!), k);
  }
});

test('only functions.ts and index.ts touch the SDK; the engine imports nothing from src/', () => {
  const files = fs.readdirSync(dir, { recursive: true }).map(String).filter((f) => f.endsWith('.ts') && !f.startsWith('test'));
  for (const f of files) {
    const text = fs.readFileSync(path.join(dir, f), 'utf8');
    const fromSrc = [...text.matchAll(/from '((?:\.\.\/)+src\/[^']+)'/g)].map((m) => m[1]);
    if (f.startsWith('engine')) assert.deepEqual(fromSrc, [], f);
    else for (const m of fromSrc) assert.equal(m, '../../src/sdk/index.js', `${f} imports ${m}`);
  }
});
