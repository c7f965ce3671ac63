/**
 * The precompiled validators (issue 32; src/kit/precompile.ts, written by `npm run build` into
 * dist/validators/): generated here from the current code into a temporary folder, they cover every
 * schema the core and the built-in handlers publish, give the same answers (violations and all) as ajv
 * compiling the schema at run time, and are found by the schema's content only, so a schema that changed
 * after the build compiles with ajv instead of using a validator generated for its old text. A build in
 * dist/ that lacks a validator the current code needs is stale and fails here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { coreSchemas, handlerSchemas, writeValidators, type KnownSchema } from '../../src/kit/precompile.js';
import { precompiledName, SchemaValidator } from '../../src/protocol/schema-validator.js';
import { InvokeParams } from '../../src/protocol/messages.js';
import { mutations, sampleValid } from '../../src/trial/samples.js';
import { ROOT } from '../helpers/stack.js';
import { slow } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'aios-validators-'));
let schemas: KnownSchema[] = [];
let files: string[] = [];

test.before(async () => {
  schemas = [...coreSchemas(), ...(await handlerSchemas())];
  files = writeValidators(dir, schemas).files;
});
test.after(() => rmSync(dir, { recursive: true, force: true }));

test('every schema of the core and of each built-in function has its validator', { timeout: slow(120_000) }, () => {
  const origins = schemas.map((s) => s.origin);
  for (const must of ['protocol/messages.InvokeParams', 'protocol/messages.Descriptor', 'config/agent-config.AgentConfigSchema', 'device.info input_schema', 'device.info output_schema', 'files.list_dir output_schema', 'handlers/serial grant kind serial']) {
    assert.ok(origins.includes(must), `${must} is precompiled`);
  }
  const missing = schemas.filter((s) => !files.includes(precompiledName(s.schema))).map((s) => s.origin);
  assert.deepEqual(missing, []);
  assert.equal(files.length, new Set(schemas.map((s) => precompiledName(s.schema))).size, 'one file per distinct schema, nothing else');
});

test('a precompiled validator answers as ajv compiling the schema at run time, violations included', { timeout: slow(120_000) }, () => {
  const pre = new SchemaValidator(dir);
  const ajv = new SchemaValidator(undefined);
  let compared = 0;
  for (const { origin, schema } of schemas) {
    const sample = sampleValid(schema as Record<string, unknown>);
    const values: unknown[] = [null, 'text', 12, [], {}, { aios_extra: true }];
    if (sample.ok) {
      values.push(sample.value);
      if (sample.value && typeof sample.value === 'object' && !Array.isArray(sample.value)) values.push(...mutations(schema as Record<string, unknown>, sample.value as Record<string, unknown>).map((m) => m.args));
    }
    for (const v of values) {
      assert.deepEqual(pre.check(schema, v), ajv.check(schema, v), `${origin}: ${JSON.stringify(v)}`);
      compared++;
    }
  }
  assert.ok(compared > schemas.length * 6);
  assert.equal(pre.ajvCompiled, 0, 'every schema was answered by its precompiled validator');
  assert.equal(ajv.ajvCompiled, new Set(schemas.map((s) => s.schema)).size);
});

test('a schema is found by its content: a changed one compiles with ajv and answers for its new text', () => {
  const v = new SchemaValidator(dir);
  const changed = Type.Object({ ...InvokeParams.properties, extra: Type.String() }, { additionalProperties: false });
  assert.ok(!existsSync(join(dir, precompiledName(changed))), 'no validator was generated for the changed text');
  assert.deepEqual(v.validate(changed, {}).find((x) => x.pointer === '/extra'), { pointer: '/extra', message: 'is required' });
  assert.equal(v.ajvCompiled, 1, 'the changed schema was compiled by ajv');
  // A bad schema the build never saw is still refused at registration (checked by ajv's meta-schema).
  assert.throws(() => v.checkSchema({ type: 'nonsense' }));
});

test('the build in dist/, when there is one, has every validator the current code needs (else it is stale)', (t) => {
  const built = join(ROOT, 'dist', 'validators');
  if (!existsSync(built)) {
    t.skip('no build in dist/ (npm run build makes it)');
    return;
  }
  const have = new Set(readdirSync(built));
  const stale = schemas.filter((s) => !have.has(precompiledName(s.schema))).map((s) => s.origin);
  assert.deepEqual(stale, [], 'dist/validators is older than the code: run npm run build');
});
