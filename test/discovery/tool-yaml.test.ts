import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseToolYaml, toolYamlToCard } from '../../src/discovery/tool-yaml.js';
import { validateCard } from '../../src/protocol/manifest-schemas.js';
import { skillToDescriptor } from '../../src/discovery/card.js';
import { Descriptor } from '../../src/protocol/messages.js';
import { schemaValidator } from '../../src/protocol/schema-validator.js';
import { ManifestError } from '../../src/discovery/tool-yaml.js';
import { AdapterProblem, renderProblem, type ProblemMessage } from '../../src/discovery/adapter-problem.js';

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
  assert.throws(() => parseToolYaml(YAML + 'entry: other.mjs\n'), /^ManifestError: tool\.aios\.yaml line 10, column 1 could not be read: Map keys must be unique$/);
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

/** The ManifestError `parseToolYaml(text)` throws. */
function manifestError(text: string): ManifestError {
  try {
    parseToolYaml(text);
  } catch (e) {
    assert.ok(e instanceof ManifestError, String(e));
    return e;
  }
  throw new Error('expected a ManifestError');
}

test('a YAML error is a catalogue message with the line and column as params, said in English and in Chinese', () => {
  const e = manifestError(YAML.replace('  - { capability: scanner.status, level: public }\n', '  - { capability: scanner.status, level: public\n'));
  assert.equal(e.said.key, 'core.adapter.yaml_at');
  // The unclosed flow map is noticed where the document ends.
  assert.equal(e.said.params?.['line'], 10);
  assert.equal(e.said.params?.['column'], 1);
  assert.match(renderProblem(e.said, 'en'), /^tool\.aios\.yaml line 10, column 1 could not be read: Flow map in block collection must be sufficiently indented and end with a \}$/);
  assert.equal(e.message, renderProblem(e.said, 'en'), 'the English message is the en rendering');
  assert.match(renderProblem(e.said, 'zh-CN'), /^无法读取 tool\.aios\.yaml 第 10 行第 1 列：Flow map in block collection/);
});

test('schema violations are said in the reader\'s language: our rewordings from the catalogue, ajv\'s own through ajv-i18n', () => {
  const e = manifestError(YAML.replace('level: high', 'level: max').replace('name: Scanner,', 'name: 5, colour: red,'));
  assert.equal(e.said.key, 'core.adapter.schema');
  const en = renderProblem(e.said, 'en');
  const zh = renderProblem(e.said, 'zh-CN');
  assert.match(en, /^tool\.aios\.yaml does not match its schema \(/);
  assert.match(en, /\/tool\/name must be string/);
  assert.match(en, /\/tool\/colour is not an allowed property/);
  assert.match(en, /\/permissions\/0\/level must be one of "public", "low"/);
  assert.match(zh, /^tool\.aios\.yaml 不符合其模式（/);
  assert.match(zh, /\/tool\/name：应当是 string 类型/, 'ajv-i18n\'s Chinese for a type error');
  assert.match(zh, /\/tool\/colour：不是允许的属性/);
  assert.match(zh, /\/permissions\/0\/level：必须是以下之一："public", "low"/);
  assert.doesNotMatch(zh, /must|is not|allowed/, 'no English left in the Chinese sentence');
  // What travels (registry.info's reason_message) is plain data: it renders the same after JSON.
  assert.equal(renderProblem(JSON.parse(JSON.stringify(e.said)), 'zh-CN'), zh);
});

test('past the first three violations the rest are counted, in both languages', () => {
  const e = manifestError(YAML.replace('level: high', 'level: max').replace('name: Scanner,', 'name: 5, colour: red, size: 1, weight: 2,'));
  // Only the three that are said travel (registry answers carry the message); the rest are a count.
  assert.equal(e.said.violations!.length, 3);
  const rest = e.said.more!;
  assert.ok(rest >= 2, `five violations or more (${rest} past three)`);
  const en = renderProblem(e.said, 'en');
  assert.match(en, new RegExp(`; and ${rest} more\\)$`));
  assert.equal(en.split('; ').length, 4, 'three violations and the count');
  assert.match(renderProblem(e.said, 'zh-CN'), new RegExp(`；另有 ${rest} 处）$`));
  assert.equal(renderProblem(JSON.parse(JSON.stringify(e.said)), 'en'), en, 'the same after JSON');
  // Three or fewer: no count.
  const { more: _more, ...three } = e.said;
  assert.doesNotMatch(renderProblem(three, 'en'), /more/);
});

test('a problem whose key this build does not know renders as the English reason it came with', () => {
  assert.equal(renderProblem({ key: 'core.adapter.from_a_newer_agent' }, 'zh-CN', 'the English reason'), 'the English reason');
  // Damaged data (it may come over JSON) renders as best it can instead of throwing.
  const damaged = JSON.parse('{"key":"core.adapter.code_refused","params":{"detail":null},"violations":{}}') as ProblemMessage;
  assert.equal(renderProblem(damaged, 'zh-CN'), '代码被拒绝：null');
});

test('mcp adapters: mcp instead of capabilities (one or the other, no entry or permissions); the command is checked before every start', async () => {
  const head = 'tool: { id: org.example.m, name: M, version: 1.0.0 }\n';
  const mcp = 'mcp: { command: server.sh, prefix: m }\n';
  const card = toolYamlToCard(parseToolYaml(head + mcp));
  assert.deepEqual(card.mcp, { command: 'server.sh', prefix: 'm' });
  assert.deepEqual(card.skills, []);
  assert.deepEqual(validateCard(card), []);
  const cap = 'capabilities: [{ id: m.x, name: X, permission: low }]\n';
  assert.throws(() => toolYamlToCard(parseToolYaml(head + mcp + cap)), (e: AdapterProblem) => e.said.key === 'core.adapter.mcp_or_capabilities');
  assert.throws(() => toolYamlToCard(parseToolYaml(head)), (e: AdapterProblem) => e.said.key === 'core.adapter.mcp_or_capabilities');
  assert.throws(() => toolYamlToCard(parseToolYaml(head + mcp + 'entry: index.mjs\n')), (e: AdapterProblem) => e.said.key === 'core.adapter.mcp_extra');
  assert.throws(() => parseToolYaml(head + 'mcp: { command: x, prefix: Bad-Prefix }\n'), ManifestError);
  const { checkMcpCommand } = await import('../../src/discovery/mcp-adapter.js');
  const files = new Set(['server.sh']);
  await assert.rejects(checkMcpCommand({ command: 'npx', prefix: 'm' }, '/nonexistent', files), (e: AdapterProblem) => e.said.key === 'core.adapter.mcp_fetcher');
  await assert.rejects(checkMcpCommand({ command: '/usr/bin/npm', args: ['exec', 'x'], prefix: 'm' }, '/nonexistent', files), (e: AdapterProblem) => e.said.key === 'core.adapter.mcp_fetcher');
  await assert.rejects(checkMcpCommand({ command: '../outside.sh', prefix: 'm' }, '/nonexistent', files), (e: AdapterProblem) => e.said.key === 'core.adapter.mcp_command_outside');
  await assert.rejects(checkMcpCommand({ command: '/bin/sh', prefix: 'm' }, '/nonexistent', files), (e: AdapterProblem) => e.said.key === 'core.adapter.mcp_command_no_hash');
  await assert.rejects(checkMcpCommand({ command: '/bin/sh', command_sha256: '0'.repeat(64), prefix: 'm' }, '/nonexistent', files), (e: AdapterProblem) => e.said.key === 'core.adapter.mcp_command_hash');
});
