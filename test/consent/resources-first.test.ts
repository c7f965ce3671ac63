/**
 * Resources before consent (issue 12, items 1-2), on the real call path: bridge → agent with the files
 * handler and a tray page attached over `WS /rpc` as the one who answers prompts. A call on a path
 * outside every shared folder, or one that cannot succeed, ends `rejected` before anyone is asked (the
 * prompt queue stays empty), is journalled (a retry replays it); a call inside a folder still asks where
 * the policy says so, and "allow & remember" covers the folder the prompt showed, not the others.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inProcessStack, ids, until } from '../helpers/stack.js';
import { connectUi, type UiClient } from './fixtures/ui-client.js';
import { attachAnswerer } from './fixtures/answerer.js';
import { newCallId } from '../../src/protocol/call-id.js';

type Stack = Awaited<ReturnType<typeof inProcessStack>>;

describe('resources are checked before consent (files handler, a page attached)', () => {
  let s: Stack;
  let ui: UiClient;
  let detach: () => void;
  let rootA: string;
  let rootB: string;
  let outside: string;
  const promptsShown = () => ui.notes.filter((n) => n.method === 'control/notification.prompt');

  let folders: string;

  before(async () => {
    folders = realpathSync(mkdtempSync(join(tmpdir(), 'aios-k1-')));
    rootA = join(folders, 'A');
    rootB = join(folders, 'B');
    outside = join(folders, 'outside');
    for (const d of [rootA, rootB, outside, join(rootA, 'full')]) mkdirSync(d, { recursive: true });
    writeFileSync(join(outside, 'secret.txt'), 'secret');
    writeFileSync(join(rootA, 'full', 'x.txt'), 'x');
    s = await inProcessStack({
      agent: {
        confirmations: { provider: 'ui', timeout_ms: 60_000 },
        grants: { files: [{ path: rootA, access: 'read_write', alias: 'A' }, { path: rootB, access: 'read_write', alias: 'B' }] },
        handlers: { diagnostics: { enabled: true }, files: { use_trash: false } },
      },
    });
    ui = await connectUi(s.running.agent.config.data_dir);
    detach = await attachAnswerer(ui);
    await until(() => s.running.consent.status().active_provider === 'ui', 5000, 'the page to be the answerer');
  });
  after(async () => {
    detach?.();
    ui?.close();
    await s.stop();
    rmSync(folders, { recursive: true, force: true });
  });

  const ungranted: [string, Record<string, unknown>][] = [
    ['files.read_text', { path: '' }],
    ['files.write_text', { path: '', text: 'x', mode: 'overwrite' }],
    ['files.delete', { path: '' }],
  ];
  for (const [fn, base] of ungranted) {
    test(`${fn} outside every shared folder → rejected/permission_denied, side_effects none, no prompt`, async () => {
      for (const p of [{ path: join(outside, 'secret.txt') }, { root: 'A', path: '../outside/secret.txt' }]) {
        const { record } = await s.client.call(fn, { ...base, ...p }, { wait: true, wait_timeout_ms: 20_000 });
        assert.equal(record.outcome?.state, 'rejected', `${fn} ${JSON.stringify(p)}: ${JSON.stringify(record.outcome)}`);
        assert.equal(record.outcome?.error?.type, 'permission_denied');
        assert.equal(record.outcome?.error?.side_effects, 'none');
        assert.ok(record.outcome?.error?.message, 'the reason is said');
        assert.equal(record.outcome?.confirmation, undefined, 'nobody was asked');
      }
      assert.equal(s.running.consent.queue.size(), 0);
      assert.equal(promptsShown().length, 0, 'no prompt was ever shown');
      assert.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'secret');
    });
  }

  test('the refusal is journalled: a retry with the same call_id replays it', async () => {
    const params = {
      call_id: newCallId(), function: 'files.write_text',
      arguments: { path: join(outside, 'new.txt'), text: 'x' },
      workspace_id: ids.workspace_id, user_id: ids.user_id, device_id: ids.device_id,
    };
    const first = await s.agent.dispatcher.invoke(params);
    assert.equal(first.state, 'rejected');
    assert.equal(first.replayed, false);
    const again = await s.agent.dispatcher.invoke(params);
    assert.equal(again.replayed, true);
    assert.equal(again.error?.type, 'permission_denied');
    assert.equal(s.agent.journal.get(params.call_id)?.outcome?.state, 'rejected');
    assert.equal(existsSync(join(outside, 'new.txt')), false);
    assert.equal(promptsShown().length, 0);
  });

  test('a delete of a folder with contents without recursive cannot succeed → rejected/invalid_arguments, no prompt', async () => {
    const { record } = await s.client.call('files.delete', { root: 'A', path: 'full' }, { wait: true, wait_timeout_ms: 20_000 });
    assert.equal(record.outcome?.state, 'rejected', JSON.stringify(record.outcome));
    assert.equal(record.outcome?.error?.type, 'invalid_arguments');
    assert.equal(record.outcome?.error?.side_effects, 'none');
    assert.equal(promptsShown().length, 0);
    assert.ok(existsSync(join(rootA, 'full', 'x.txt')));
  });

  test('inside a shared folder the policy still asks; "allow & remember" in A does not cover B', async () => {
    const ask = async (root: string, name: string) => {
      const { record } = await s.client.call('files.write_text', { root, path: name, text: 'hi' }, { wait: false });
      const note = await ui.note('control/notification.prompt', (p) => p['call_id'] === record.call_id, 10_000);
      return { callId: record.call_id, prompt: note };
    };
    const a = await ask('A', 'one.txt');
    assert.deepEqual((a.prompt['resources'] as { label?: string }[]).map((r) => r.label), ['A'], 'the prompt shows the folder by its alias');
    await ui.call('control.prompts.answer', { prompt_id: a.prompt['prompt_id'], answer: 'allow_remember', scope: 'session' });
    assert.equal((await s.client.waitTerminal(a.callId, 10_000)).outcome?.state, 'completed');

    // Remembered for A: the next write in A runs without a prompt.
    const before = promptsShown().length;
    const again = await s.client.call('files.write_text', { root: 'A', path: 'two.txt', text: 'hi' }, { wait: true, wait_timeout_ms: 20_000 });
    assert.equal(again.record.outcome?.state, 'completed');
    assert.equal(again.record.outcome?.confirmation?.decided_by, 'remembered');
    assert.equal(promptsShown().length, before);

    // B was not shown, so it is not covered: it asks.
    const b = await ask('B', 'three.txt');
    assert.equal(b.prompt['function_id'], 'files.write_text');
    await ui.call('control.prompts.answer', { prompt_id: b.prompt['prompt_id'], answer: 'deny' });
    assert.equal((await s.client.waitTerminal(b.callId, 10_000)).outcome?.error?.type, 'user_rejected');
    assert.equal(existsSync(join(rootB, 'three.txt')), false);

    const { decisions } = (await ui.call('control.decisions.list')) as { decisions: { function_id: string; resource: string }[] };
    assert.deepEqual(decisions.map((d) => [d.function_id, d.resource]), [['files.write_text', `files:${rootA}`]], 'scoped to A, never *');
    // The activity list names the folder by its alias, as the prompt did.
    const { calls } = (await ui.call('control.activity.list', { function: 'files.write_text', limit: 3 })) as { calls: { call_id: string; resources: { kind: string; label: string }[] | null }[] };
    assert.deepEqual(calls.find((c) => c.call_id === b.callId)?.resources, [{ kind: 'files', label: 'B' }]);
  });

  test('the activity list holds a call as soon as its answer is out (its book-keeping is run for the list)', async () => {
    for (let i = 0; i < 5; i++) {
      const { record } = await s.client.call('diagnostics.echo', { value: i }, { wait: true, wait_timeout_ms: 20_000 });
      assert.equal(record.outcome?.state, 'completed');
      const { calls } = (await ui.call('control.activity.list', { function: 'diagnostics.echo', limit: 1 })) as { calls: { call_id: string }[] };
      assert.equal(calls[0]?.call_id, record.call_id, `call ${i} is listed at once`);
    }
  });
});
