/**
 * A grant kind declared by a built-in handler alone (issue 12, item 3): a handler folder written by this
 * test (no file under src/ knows the kind) is loaded by the CLI-started agent; `run --config` validates
 * `grants.<kind>` against the handler's entry schema and names the bad key; an unknown kind and a folder
 * under /proc refuse the start; the alias is matched before consent and shown in the prompt; grants
 * changed through `control.grants.*` take effect without a restart, inside the admin ceiling.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentDoc, cliRun, processStack, tokens } from '../helpers/stack.js';
import { BUILTIN_HANDLERS_DIR } from '../../src/version.js';
import { connectUi, type UiClient } from './fixtures/ui-client.js';
import { attachAnswerer } from './fixtures/answerer.js';

const NAME = `zz_k1_gauge_${process.pid}`;
const DIR = join(BUILTIN_HANDLERS_DIR, NAME);
const KIND = 'k1gauge';

/** The test handler: a `k1gauge` grant kind (a port path, or { alias, path, ask }) and two functions on it. */
const HANDLER = `
import { Type } from '@sinclair/typebox';
import { defineGrantKind, defineHandler, fail } from '../../src/sdk/index.js';

const gauges = defineGrantKind({
  kind: '${KIND}',
  entry: Type.Union([
    Type.String({ pattern: '^/dev/' }),
    Type.Object({ alias: Type.Optional(Type.String({ minLength: 1 })), path: Type.String({ pattern: '^/dev/' }), ask: Type.Optional(Type.Literal('always')) }, { additionalProperties: false }),
  ]),
  normalize: (e) => (typeof e === 'string' ? { id: e } : { id: e.path, alias: e.alias, ask: e.ask }),
});

const input = { type: 'object', properties: { port: { type: 'string' } }, required: ['port'], additionalProperties: false };
const fn = (id, level, readOnly) => ({
  descriptor: {
    id: '${NAME}.' + id, name: 'Gauge ' + id, description: 'test', version: '1.0.0', capability_type: 'device', access: 'restricted',
    permission_level: level, confirmation: 'policy', risk: { read_only: readOnly, destructive: !readOnly, idempotent: true, physical: true },
    input_schema: input, output_schema: { type: 'object' }, timeout_ms_default: 5000, timeout_ms_max: 10000, cancellable: true, locks: [],
  },
  resources(a, { grants }) {
    const g = grants.find('${KIND}', a.port);
    if (!g) fail('permission_denied', 'Gauge ' + a.port + ' is not shared with this agent; add it under grants.${KIND}.');
    return [{ kind: '${KIND}', id: g.id }];
  },
  async run(a) {
    return { port: a.port };
  },
});

export default defineHandler({
  name: '${NAME}',
  grantKinds: [gauges],
  create: () => [fn('read', 'medium', true), fn('zero', 'high', false)],
});
`;

/** Runs `aios-device run --config` on a config that must be refused; returns what it printed. */
async function refusedStart(dir: string, extra: Record<string, unknown>): Promise<string> {
  const cfg = join(dir, `bad-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(cfg, JSON.stringify(agentDoc(dir, 'http://127.0.0.1:9', tokens(), { local_endpoint: { enabled: false }, ...extra })));
  const r = await cliRun(['run', '--config', cfg]);
  assert.notEqual(r.code, 0, `the agent must refuse to start: ${r.out}${r.err}`);
  return r.err + r.out;
}

describe('a grant kind declared by a handler alone', () => {
  let work: string;
  before(() => {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(join(DIR, 'index.ts'), HANDLER);
    work = realpathSync(mkdtempSync(join(tmpdir(), 'aios-k1-kinds-')));
  });
  after(() => {
    rmSync(DIR, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  });

  test('run --config checks grants.<kind> against the handler\'s schema and names the bad key', async () => {
    const bad = await refusedStart(work, { grants: { [KIND]: ['/dev/ok0', { alias: 'scale', path: '/tmp/not-a-device' }] } });
    assert.match(bad, new RegExp(`grants\\.${KIND}\\[1\\]`), bad);
    const unknown = await refusedStart(work, { grants: { nosuchkind: ['x'] } });
    assert.match(unknown, /grants\.nosuchkind: unknown grant kind/);
    assert.match(unknown, new RegExp(KIND), 'the known kinds are listed');
    const proc = await refusedStart(work, { grants: { files: [{ path: '/proc/self', access: 'read' }] } });
    assert.match(proc, /grants\.files\[0\].*device or kernel folder/);
  });

  describe('running with grants.k1gauge: [{ alias: scale, path: /dev/fake0 }]', () => {
    let s: Awaited<ReturnType<typeof processStack>>;
    let ui: UiClient;
    let stopBeat: () => void;
    let late: string;
    before(async () => {
      late = join(work, 'late');
      mkdirSync(late);
      writeFileSync(join(late, 'a.txt'), 'late share');
      s = await processStack({ agent: { confirmations: { provider: 'ui', timeout_ms: 60_000 }, grants: { [KIND]: [{ alias: 'scale', path: '/dev/fake0' }] } } });
      ui = await connectUi(join(s.dir, 'agent'));
      stopBeat = await attachAnswerer(ui);
    });
    after(async () => {
      stopBeat?.();
      ui?.close();
      await s?.stop();
    });
    const read = async (port: string) => (await s.client.call(`${NAME}.read`, { port }, { wait: true, wait_timeout_ms: 20_000 })).record.outcome;

    test('the alias and the id both address the grant; anything else is refused before consent', async () => {
      for (const port of ['scale', '/dev/fake0']) {
        const o = await read(port);
        assert.equal(o?.state, 'completed', `${port}: ${JSON.stringify(o)}`);
        assert.equal(o?.confirmation?.decision, 'not_required', 'medium on a granted resource runs without asking');
      }
      const o = await read('/dev/fake1');
      assert.equal(o?.state, 'rejected');
      assert.equal(o?.error?.type, 'permission_denied');
      assert.match(o?.error?.message ?? '', /not shared/);
      assert.equal(ui.notes.filter((n) => n.method === 'control/notification.prompt').length, 0);
    });

    test('a prompt shows the alias, and "remember" is scoped to that gauge', async () => {
      const { record } = await s.client.call(`${NAME}.zero`, { port: 'scale' }, { wait: false });
      const p = await ui.note('control/notification.prompt', (x) => x['call_id'] === record.call_id, 10_000);
      assert.deepEqual(p['resources'], [{ kind: KIND, id: '/dev/fake0', label: 'scale' }]);
      assert.equal(p['remember_any'], true, 'the page may offer "any"');
      await ui.call('control.prompts.answer', { prompt_id: p['prompt_id'], answer: 'allow_remember', scope: 'session' });
      assert.equal((await s.client.waitTerminal(record.call_id, 10_000)).outcome?.state, 'completed');
      // Addressed by its id this time: the same gauge, so the remembered answer covers it.
      const again = await s.client.call(`${NAME}.zero`, { port: '/dev/fake0' }, { wait: true, wait_timeout_ms: 20_000 });
      assert.equal(again.record.outcome?.confirmation?.decided_by, 'remembered');
    });

    test('control.grants: remove and add take effect without a restart; the config is a ceiling', async () => {
      const listed = (await ui.call('control.grants.list', { kind: KIND })) as { grants: Record<string, { id: string; alias?: string; source: string }[]>; kinds: { kind: string; owner: string }[] };
      assert.deepEqual(listed.grants[KIND]?.map((g) => [g.id, g.alias, g.source]), [['/dev/fake0', 'scale', 'config']]);
      assert.ok(listed.kinds.some((k) => k.kind === KIND && k.owner === NAME));

      // Wider than the admin config: refused, naming the key.
      await assert.rejects(ui.call('control.grants.add', { kind: KIND, entry: { alias: 'pump', path: '/dev/fake1' } }), /grants\.k1gauge: .*only narrow/);
      // Narrowing: the configured gauge is removed for this user, at once.
      assert.deepEqual(await ui.call('control.grants.remove', { kind: KIND, id: 'scale' }), { removed: true });
      assert.equal((await read('scale'))?.error?.type, 'permission_denied');
      // Back inside the ceiling: added again, at once.
      await ui.call('control.grants.add', { kind: KIND, entry: { alias: 'scale', path: '/dev/fake0' } });
      assert.equal((await read('scale'))?.state, 'completed');
      // A kind the config leaves out has no ceiling: a folder shared now is readable now.
      assert.equal((await s.client.call('files.read_text', { root: 'late', path: 'a.txt' }, { wait: true, wait_timeout_ms: 20_000 })).record.outcome?.error?.type, 'permission_denied');
      await ui.call('control.grants.add', { kind: 'files', entry: { path: late, access: 'read' } });
      const r = await s.client.call('files.read_text', { root: 'late', path: 'a.txt' }, { wait: true, wait_timeout_ms: 20_000 });
      assert.equal((r.record.outcome?.output as { text?: string } | undefined)?.text, 'late share', JSON.stringify(r.record.outcome));
      // Persisted in the data folder (user grants), never in the admin's config file.
      const stored = readFileSync(join(s.dir, 'agent', 'user-grants.json'), 'utf8');
      assert.match(stored, /late/);
      assert.ok(existsSync(s.agentConfig) && !readFileSync(s.agentConfig, 'utf8').includes('late'));
      const listed2 = await cliRun(['grants', '--data-dir', join(s.dir, 'agent'), '--json']);
      const user = (JSON.parse(listed2.out) as { user: { added: { kind: string }[]; removed: { kind: string; id: string }[] } }).user;
      assert.deepEqual(user.added.map((a) => a.kind), [KIND, 'files'], '`aios-device grants` shows the user\'s changes');
    });
  });
});
