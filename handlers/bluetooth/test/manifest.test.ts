/** The manifest matches its folder and the code; the catalogues cover every describe() key in both languages. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import handler from '../index.js';
import { TestHandler } from './harness.js';

const dir = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

test('tool.id is the folder name and the handler name; capabilities, levels and confirmation match the descriptors', async () => {
  const y = parse(fs.readFileSync(path.join(dir, 'tool.aios.yaml'), 'utf8')) as {
    tool: { id: string };
    capabilities: { id: string; confirmation: string; access: string; permission: string }[];
  };
  assert.equal(y.tool.id, path.basename(dir));
  assert.equal(handler.name, path.basename(dir));
  const h = await TestHandler.create([]);
  assert.deepEqual(y.capabilities.map((c) => c.id).sort(), [...h.fns.keys()].sort());
  for (const c of y.capabilities) {
    assert.equal(h.fn(c.id).descriptor.confirmation, c.confirmation, c.id);
    assert.equal(h.fn(c.id).descriptor.access, c.access, c.id);
    assert.equal(h.fn(c.id).descriptor.permission_level, c.permission, c.id);
  }
});

test('en and zh-CN catalogues have the same keys, one per function, with the same placeholders', () => {
  const en = JSON.parse(fs.readFileSync(path.join(dir, 'i18n', 'en.json'), 'utf8')) as Record<string, string>;
  const zh = JSON.parse(fs.readFileSync(path.join(dir, 'i18n', 'zh-CN.json'), 'utf8')) as Record<string, string>;
  assert.deepEqual(Object.keys(zh).sort(), Object.keys(en).sort());
  const holes = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
  for (const k of Object.keys(en)) assert.deepEqual(holes(zh[k]!), holes(en[k]!), k);
  // One prompt sentence per function, and each function's title and description (issue 31).
  const fns = ['bluetooth.disconnect', 'bluetooth.read', 'bluetooth.scan', 'bluetooth.services', 'bluetooth.state', 'bluetooth.subscribe', 'bluetooth.write'];
  assert.deepEqual(Object.keys(en).sort(), [...fns, ...fns.flatMap((f) => [`bluetooth.function.${f}.description`, `bluetooth.function.${f}.title`])].sort());
});

test('the handler imports only the SDK entry from src/, and noble only through the loader (lazily)', () => {
  for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
    const text = fs.readFileSync(path.join(dir, f), 'utf8');
    for (const m of text.matchAll(/from '(\.\.\/\.\.\/src\/[^']+)'/g)) assert.equal(m[1], '../../src/sdk/index.js', `${f} imports ${m[1]}`);
    // Only static imports load at handler creation (a dynamic import() inside a function is lazy).
    assert.doesNotMatch(text, /^import [^;]*from '@abandonware\/noble'/m, `${f} imports noble eagerly`);
  }
});

test('the macOS build declares the Bluetooth usage string (CoreBluetooth ends an app without one)', () => {
  const y = parse(fs.readFileSync(path.join(dir, '..', '..', 'build', 'electron-builder.yml'), 'utf8')) as { mac: { extendInfo: Record<string, string> } };
  assert.match(y.mac.extendInfo['NSBluetoothAlwaysUsageDescription'] ?? '', /Bluetooth/);
});
