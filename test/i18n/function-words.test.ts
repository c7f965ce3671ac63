/**
 * Issue 31 §1: what a person reads about a built-in function is written in their language. Every built-in
 * function's title and one-line description (its handler's catalogue) and its prompt sentence (its own
 * describe() with sample arguments, rendered in zh-CN) hold no Latin-script phrase of three words or more
 * in the template text; parameters are given as CJK or single tokens, so they cannot hide one or make one.
 * The levels, risk flags and error explanations of the core catalogue are checked the same way.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GrantStore } from '../../src/grants/grant-store.js';
import { silentLogger } from '../../src/base/logger.js';
import { strings, type Message } from '../../src/i18n/index.js';
import { importHandler } from '../../src/kit/manifest.js';
import { asInstance, catalogueDirs, loadHandlerCatalogue } from '../../src/sdk/instance.js';
import { functionWordKeys, functionWords } from '../../src/sdk/function-words.js';
import { errorMessage, LEVELS, riskMessage } from '../../src/control/words.js';
import { ERRORS } from '../../src/protocol/errors.js';
import type { AnyFunctionDefinition, CallResource } from '../../src/sdk/index.js';
import { ROOT } from '../helpers/stack.js';

const HANDLERS = join(ROOT, 'handlers');
/** Three or more Latin-script words in a row: an English phrase left in a Chinese sentence. */
const LATIN_PHRASE = /[A-Za-z][A-Za-z'’-]*(?:[\s,]+[A-Za-z][A-Za-z'’-]*){2,}/;

/** A sample value for a JSON Schema: CJK text, a small number, the first of an enum, the schema's own bounds. */
function sample(schema: Record<string, unknown>): unknown {
  if (Array.isArray(schema['enum'])) return schema['enum'][0];
  if ('const' in schema) return schema['const'];
  for (const k of ['anyOf', 'oneOf'] as const) if (Array.isArray(schema[k])) return sample((schema[k] as Record<string, unknown>[])[0]!);
  switch (schema['type']) {
    case 'string':
      return schema['pattern'] ? 'a1' : '样本';
    case 'integer':
    case 'number':
      return Math.max(Number(schema['minimum'] ?? 1), 1);
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'object': {
      const props = (schema['properties'] ?? {}) as Record<string, Record<string, unknown>>;
      const required = (schema['required'] ?? []) as string[];
      return Object.fromEntries(required.map((k) => [k, sample(props[k] ?? {})]));
    }
    default:
      return '样本';
  }
}

/** Arguments the schema sampler cannot guess (a payload format, a path-like field). */
const ARGS: Record<string, Record<string, unknown>> = {
  'serial.request': { port: '串口甲', data: '4142', encoding: 'hex' },
  'serial.write': { port: '串口甲', data: '4142', encoding: 'hex' },
  'bluetooth.write': { device: '设备甲', service: '180f', characteristic: '2a19', value: '01', encoding: 'hex' },
};

/** Every built-in handler with its functions (created with an empty environment, as the manifest is). */
async function builtins(): Promise<{ handler: string; functions: readonly AnyFunctionDefinition[]; dispose(): Promise<void> }[]> {
  const out = [];
  for (const name of readdirSync(HANDLERS, { withFileTypes: true }).filter((e) => e.isDirectory() && !e.name.startsWith('zz_')).map((e) => e.name).sort()) {
    const h = await importHandler(join(HANDLERS, name), '.ts');
    loadHandlerCatalogue(h.name, catalogueDirs(h.name));
    const grants = new GrantStore();
    if (h.grantKinds?.length) grants.registerKinds(h.name, h.grantKinds);
    const dataDir = mkdtempSync(join(tmpdir(), `aios-words-${name}-`));
    const inst = asInstance(await h.create({ grants, options: {}, dataDir, log: silentLogger(), appVersion: '0.0.0', listFunctions: () => [] }));
    out.push({
      handler: h.name,
      functions: inst.functions,
      dispose: async () => {
        await inst.dispose?.();
        rmSync(dataDir, { recursive: true, force: true });
      },
    });
  }
  return out;
}

test('every built-in function: title, description and prompt sentence in zh-CN hold no English phrase', async () => {
  const handlers = await builtins();
  const found: string[] = [];
  let functions = 0;
  let sentences = 0;
  try {
    for (const { handler, functions: fns } of handlers) {
      for (const def of fns) {
        const d = def.descriptor;
        functions++;
        assert.ok(functionWordKeys(d.id, handler), `${d.id}: ${handler}'s catalogue has its title`);
        const words = functionWords(d, 'zh-CN', handler);
        assert.ok(words.description, `${d.id}: ${handler}'s catalogue has its description`);
        for (const [what, text] of [['title', words.title], ['description', words.description]] as const) {
          if (LATIN_PHRASE.test(text)) found.push(`${d.id} ${what}: ${text}`);
        }
        if (!def.describe) continue;
        const args = ARGS[d.id] ?? (sample(d.input_schema) as Record<string, unknown>);
        const resources: CallResource[] = [{ kind: handler, id: '资源甲', label: '资源甲' }];
        let said: Message | string;
        try {
          said = await (def.describe as (a: unknown, r: readonly CallResource[]) => Message | string | Promise<Message | string>)(args, resources);
        } catch (e) {
          assert.fail(`${d.id}: describe() threw on ${JSON.stringify(args)}: ${(e as Error).message}`);
        }
        assert.equal(typeof said, 'object', `${d.id}: a built-in function describes a call with a catalogue key`);
        const m = said as Message;
        assert.ok(strings.has(m.key), `${d.id}: ${m.key} is in the catalogue`);
        const text = strings.render(m, 'zh-CN');
        sentences++;
        if (LATIN_PHRASE.test(text)) found.push(`${d.id} sentence (${m.key}): ${text}`);
      }
    }
  } finally {
    for (const h of handlers) await h.dispose();
  }
  assert.ok(functions >= 43, `all built-in functions were checked (${functions})`);
  assert.ok(sentences >= 30, `the prompt sentences were rendered (${sentences})`);
  assert.deepEqual(found, [], 'English phrases in zh-CN');
});

test('levels, risk flags and every error type explained in zh-CN, with their params', () => {
  const has = (k: string): boolean => strings.has(k);
  const texts: string[] = [];
  for (const level of LEVELS) {
    assert.ok(has(`core.level.${level}`), `core.level.${level}`);
    texts.push(strings.render(riskMessage({ permission_level: level, risk: { destructive: true, physical: true, idempotent: false } }, has), 'zh-CN'));
    texts.push(strings.render(riskMessage({ permission_level: level, risk: { read_only: true } }, has), 'zh-CN'));
  }
  const details = [{}, { path: '报告.docx', limit: 1024, min_client_version: '2.0.0', client_version: '1.0.0', supported: ['1.2'], retry_after_ms: 2000 }, { min_client_version: '2.0.0' }];
  for (const type of Object.keys(ERRORS)) {
    assert.ok(has(`core.error.${type}`), `core.error.${type} explains ${type}`);
    for (const d of details) {
      const m = errorMessage({ type, message: 'An English wire message.', details: d }, has);
      assert.ok(has(m.key), `${m.key} exists`);
      const text = strings.render(m, 'zh-CN');
      assert.doesNotMatch(text, /\{[a-z_]+\}/, `${m.key}: every param filled`);
      texts.push(text);
    }
  }
  assert.equal(strings.render(errorMessage({ type: 'permission_denied', details: { path: '报告.docx' } }, has), 'zh-CN'), '“报告.docx”不在您共享的范围内，或者操作系统拒绝了对它的访问。');
  assert.equal(strings.render(errorMessage({ type: 'client_outdated', details: { min_client_version: '2.0.0', client_version: '1.0.0' } }, has), 'en'), 'The bridge needs AIOS Device 2.0.0 or newer; this is 1.0.0.');
  assert.deepEqual(texts.filter((t) => LATIN_PHRASE.test(t)), []);
});
