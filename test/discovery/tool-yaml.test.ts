import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseToolYaml, toolYamlToCard } from '../../src/discovery/tool-yaml.js';
import { validateCard } from '../../src/protocol/manifest-schemas.js';
import { skillToDescriptor } from '../../src/discovery/card.js';
import { Descriptor } from '../../src/protocol/messages.js';
import { schemaValidator } from '../../src/protocol/schema-validator.js';

const YAML = `
tool: { id: org.example.scan, name: Scanner, version: 1.2.0, description: Scans paper }
entry: main.mjs
capabilities:
  - { id: scanner.scan, name: Scan a page, capability_type: device }
  - { id: scanner.status, name: Scanner status, risk: { read_only: true, destructive: false, idempotent: true, physical: false } }
permissions:
  - { capability: scanner.scan, level: high }
  - { capability: scanner.status, level: public }
`;

test('tool.aios.yaml maps to a card: tool.* → adapter.*, capabilities → skills, permissions → permission_level', () => {
  const card = toolYamlToCard(parseToolYaml(YAML));
  assert.deepEqual(validateCard(card), []);
  assert.deepEqual(card.adapter, { id: 'org.example.scan', name: 'Scanner', version: '1.2.0', protocol_version: '1.0', description: 'Scans paper' });
  assert.deepEqual(card.skills.map((s) => [s.id, s.permission_level]), [['scanner.scan', 'high'], ['scanner.status', 'public']]);
});

test('a skill becomes a valid §4 descriptor with pessimistic defaults', () => {
  const card = toolYamlToCard(parseToolYaml(YAML));
  const d = skillToDescriptor(card.skills[0]!, card.adapter);
  assert.deepEqual(schemaValidator.validate(Descriptor, d), []);
  assert.equal(d.risk, undefined, 'no risk declared: treated as destructive by the consent layer');
  assert.equal(d.access, 'restricted');
  assert.equal(d.confirmation, 'policy');
  assert.equal(d.version, '1.2.0');
});

test('a capability without a permission, an unknown key, a duplicate key or a bad level is refused with the place', () => {
  assert.throws(() => toolYamlToCard(parseToolYaml(YAML.replace('  - { capability: scanner.status, level: public }\n', ''))), /scanner\.status has no entry in permissions/);
  assert.throws(() => parseToolYaml(YAML + 'extra: 1\n'), /\/extra is not an allowed property/);
  assert.throws(() => parseToolYaml(YAML + 'entry: other.mjs\n'), /not valid YAML/);
  assert.throws(() => parseToolYaml(YAML.replace('level: high', 'level: max')), /\/permissions\/0\/level/);
});

test('the built-in handlers\' manifests are valid under the same schema', async () => {
  const { readdir, readFile } = await import('node:fs/promises');
  const root = new URL('../../handlers/', import.meta.url);
  const names = await readdir(root);
  let checked = 0;
  for (const n of names) {
    const text = await readFile(new URL(`${n}/tool.aios.yaml`, root), 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    const card = toolYamlToCard(parseToolYaml(text));
    assert.equal(card.adapter.id, n, 'a manifest id matches its folder');
    assert.deepEqual(validateCard(card), [], n);
    checked++;
  }
  assert.ok(checked >= 3, `the built-in manifests were found (${checked})`);
});
