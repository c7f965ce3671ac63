/**
 * The handler kit end to end through createTestHost (the real dispatcher, registry, journal and grant
 * store): typed functions, validation against the real schemas, describe keys rendered from a handler
 * catalogue, per-call temp files removed however the call ends, cancel and timeouts with a real
 * AbortSignal, progress, in-memory blobs, and the lifecycle hooks.
 */
import { test, after } from 'node:test';
import { until } from '../helpers/wait.js';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { defineFunction, defineGrantKind, defineHandler, fail, type Handler } from '../../src/sdk/index.js';
import { createTestHost } from '../../src/kit/testing.js';

const i18n = mkdtempSync(join(tmpdir(), 'aios-kit-i18n-'));
mkdirSync(join(i18n, 'i18n'));
writeFileSync(join(i18n, 'i18n', 'en.json'), JSON.stringify({ 'kit_t.save': 'Save {bytes} bytes to {target}', 'kit_t.slot': 'slot {name}' }));
writeFileSync(join(i18n, 'i18n', 'zh-CN.json'), JSON.stringify({ 'kit_t.save': '将 {bytes} 字节保存到 {target}', 'kit_t.slot': '槽位 {name}' }));
after(() => rmSync(i18n, { recursive: true, force: true }));

/** What the test handler's hooks and temp files saw. */
const seen = { temp: [] as string[], hooks: [] as string[], resources: [] as unknown[] };

const slots = defineGrantKind({
  kind: 'kit_slot',
  entry: Type.Union([Type.String(), Type.Object({ alias: Type.String(), id: Type.String() }, { additionalProperties: false })]),
  normalize: (e) => (typeof e === 'string' ? { id: e } : { id: e.id, alias: e.alias }),
});

const save = defineFunction({
  descriptor: {
    id: 'kit_t.save', name: 'Save', description: 'Saves text into a slot through a temp file.', version: '1.0.0',
    capability_type: 'test', access: 'restricted', permission_level: 'medium', confirmation: 'policy',
    risk: { read_only: false, destructive: false, idempotent: false, physical: false },
    input_schema: Type.Object({ slot: Type.String(), text: Type.String({ maxLength: 100 }), mode: Type.Optional(Type.Union([Type.Literal('ok'), Type.Literal('fail'), Type.Literal('hang')])) }, { additionalProperties: false }),
    output_schema: Type.Object({ bytes: Type.Integer(), blob: Type.Object({ blob_id: Type.String(), sha256: Type.String(), size: Type.Integer(), media_type: Type.String() }) }, { additionalProperties: false }),
    timeout_ms_default: 20_000, timeout_ms_max: 60_000, cancellable: true, locks: [],
  },
  resources(args, { grants }) {
    const g = grants.find('kit_slot', args.slot);
    if (!g) fail('permission_denied', `Slot ${args.slot} is not shared; add it under grants.kit_slot.`);
    return [{ kind: 'kit_slot', id: g.id, label: g.alias }];
  },
  // args.text is a string and resources are typed: no casts anywhere in this definition.
  describe: (args, resources) => ({ key: 'kit_t.save', params: { bytes: Buffer.byteLength(args.text), target: { key: 'kit_t.slot', params: { name: resources[0]?.label ?? args.slot } } } }),
  async run(args, ctx) {
    seen.resources.push(...ctx.resources.map((r) => ({ kind: r.kind, id: r.id, label: r.label })));
    const file = await ctx.tempFile('.txt');
    const dir = await ctx.tempDir();
    seen.temp.push(file, dir);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    await writeFile(file, args.text);
    ctx.progress({ progress: 1, total: 2, message: 'written' });
    if (args.mode === 'fail') fail('device_busy', 'The slot is held by another program.');
    if (args.mode === 'hang') {
      await new Promise((_resolve, reject) => {
        if (ctx.signal.aborted) return reject(ctx.signal.reason);
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
      });
    }
    const blob = await ctx.blobs.uploadFile(file, 'text/plain', ctx.signal);
    return { bytes: Buffer.byteLength(await readFile(file, 'utf8')), blob };
  },
});

const handler: Handler = defineHandler({
  name: 'kit_t',
  grantKinds: [slots],
  create: () => ({
    functions: [save],
    dispose: () => void seen.hooks.push('dispose'),
    onPause: () => void seen.hooks.push('pause'),
    onResume: () => void seen.hooks.push('resume'),
  }),
});

const grants = { kit_slot: [{ alias: 'left', id: 'slot-L' }] };

test('a call runs with validated, typed arguments; its sentence comes from the catalogue; temp files are gone after', async () => {
  const host = await createTestHost(handler, { grants, catalogueDir: join(i18n, 'i18n') });
  try {
    const out = await host.call('kit_t.save', { slot: 'left', text: 'hello' });
    assert.equal(out.state, 'completed', JSON.stringify(out.error));
    const output = out.output as { bytes: number; blob: { blob_id: string; sha256: string; size: number; media_type: string } };
    assert.equal(output.bytes, 5);
    assert.equal(host.blobs.get(output.blob).toString(), 'hello', 'the in-memory blob client holds the upload');
    assert.deepEqual(host.prompts.map((p) => p.sentence), ['Save 5 bytes to slot left']);
    assert.deepEqual(host.prompts[0]!.resources, [{ kind: 'kit_slot', id: 'slot-L', label: 'left' }]);
    assert.deepEqual(seen.resources, [{ kind: 'kit_slot', id: 'slot-L', label: 'left' }], 'run() sees the resolved resources in ctx.resources');
    assert.ok(host.progress.some((p) => p.message === 'written'), 'progress is captured');
    for (const p of seen.temp) assert.ok(p.startsWith(join(host.dataDir, 'tmp', 'calls')), 'temp files live under the data dir');
    await until(() => seen.temp.every((p) => !existsSync(p)), 10_000, 'temp files removed after success');
  } finally {
    await host.close();
  }
});

test('the same sentence in Chinese; bad arguments and ungranted slots never run nor prompt', async () => {
  const host = await createTestHost(handler, { grants, catalogueDir: join(i18n, 'i18n'), locale: 'zh-CN' });
  try {
    assert.equal((await host.call('kit_t.save', { slot: 'left', text: 'hé' })).state, 'completed');
    assert.deepEqual(host.prompts.map((p) => p.sentence), ['将 3 字节保存到 槽位 left']);
    const bad = await host.call('kit_t.save', { slot: 'left', text: 5 });
    assert.equal(bad.error?.type, 'invalid_arguments');
    const ungranted = await host.call('kit_t.save', { slot: 'right', text: 'x' });
    assert.equal(ungranted.state, 'rejected');
    assert.equal(ungranted.error?.type, 'permission_denied');
    assert.equal(host.prompts.length, 1, 'neither call was put to the user');
    assert.ok(host.grants.remove('kit_slot', 'left'));
    assert.equal((await host.call('kit_t.save', { slot: 'left', text: 'x' })).error?.type, 'permission_denied', 'a grant removed live takes effect');
  } finally {
    await host.close();
  }
});

test('temp files go however the call ends: failure, cancel, timeout; denial by the user never runs', async () => {
  const host = await createTestHost(handler, { grants, catalogueDir: join(i18n, 'i18n'), answer: (p) => (p.sentence.includes('9 bytes') ? 'deny' : 'allow') });
  try {
    seen.temp.length = 0;
    const failed = await host.call('kit_t.save', { slot: 'left', text: 'x', mode: 'fail' });
    assert.equal(failed.state, 'failed');
    assert.equal(failed.error?.type, 'device_busy');

    const started = host.start('kit_t.save', { slot: 'left', text: 'x', mode: 'hang' });
    await until(() => seen.temp.length >= 4, 10_000, 'the hanging call made its temp files');
    const cancel = await host.cancel(started.callId);
    assert.ok(['cancelled', 'running'].includes(cancel.state), `cancel answered ${cancel.state}`);
    assert.equal((await started.outcome).state, 'cancelled');

    const timedOut = await host.call('kit_t.save', { slot: 'left', text: 'x', mode: 'hang' }, { timeoutMs: 300 });
    assert.equal(timedOut.error?.type, 'timeout');
    await until(() => seen.temp.length === 6 && seen.temp.every((p) => !existsSync(p)), 10_000, () => `every temp file removed: ${JSON.stringify(seen.temp.map((p) => [p, existsSync(p)]))}`);

    const denied = await host.call('kit_t.save', { slot: 'left', text: 'x'.repeat(9) });
    assert.equal(denied.error?.type, 'user_rejected');
    assert.equal(seen.temp.length, 6, 'a denied call never ran');
    await until(() => readdirSync(join(host.dataDir, 'tmp', 'calls')).length === 0, 10_000, 'the calls temp folder is empty');
  } finally {
    await host.close();
  }
});

test('lifecycle: create() may return hooks; pause, resume and dispose reach them (dispose once); a plain array still works', async () => {
  seen.hooks.length = 0;
  const host = await createTestHost(handler, { grants, catalogueDir: join(i18n, 'i18n') });
  await host.pause();
  await host.resume();
  await host.close();
  await host.handler.dispose();
  assert.deepEqual(seen.hooks, ['pause', 'resume', 'dispose']);

  const plain = defineHandler({ name: 'kit_plain', create: () => [save] });
  const h2 = await createTestHost(plain, { grants: {}, extraHandlers: [handler] });
  try {
    assert.deepEqual(h2.handler.functions.map((f) => f.descriptor.id), ['kit_t.save']);
    await h2.pause();
  } finally {
    await h2.close();
  }
});

/** Polls a condition (no fixed sleeps): resolves when it holds, fails after 10 s. */
