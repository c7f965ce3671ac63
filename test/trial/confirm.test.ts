/**
 * Issue #30, confirmation both ways: allowed → the effect happened; denied → it did not; unanswered → the
 * short confirm_timeout_ms runs out; a policy that pre-allows the high-risk function (no prompt) fails, and
 * so does a handler whose effect happens although the user denied it.
 * Answered by the trial itself (--unattended), the check is simulated, never pass.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inProcessStack, ids, tempDir, ROOT } from '../helpers/stack.js';
import { runTrial } from '../../src/trial/run-trial.js';
import { slow } from '../helpers/wait.js';

const trial = (s: Awaited<ReturnType<typeof inProcessStack>>, allowEffects: boolean) =>
  runTrial({ bridge: s.url, runtimeToken: s.tokens.runtime, workspace: ids.workspace_id, devices: [ids.device_id], only: ['confirm'], control: 'local', agentDataDir: join(s.dir, 'agent'), unattended: true, allowEffects });

test('a healthy device: allowed writes the scratch file, denied and unanswered do not; simulated under --unattended', { timeout: slow(120_000) }, async () => {
  const s = await inProcessStack({});
  try {
    for (const fx of [true, false]) {
      const r = await trial(s, fx);
      const c = r.checks.find((x) => x.id === 'confirm.high_risk')!;
      assert.equal(c.verdict, 'simulated', c.message);
      assert.match(c.message, /denied: no effect; unanswered: confirmation_timeout/);
      assert.match(c.message, /answered by the trial, not a person/);
      const fns = c.evidence.map((x) => (x.request as { function?: string } | undefined)?.function);
      assert.ok(fns.every((f) => f === (fx ? 'files.write_text' : 'diagnostics.confirm')), JSON.stringify(fns));
      assert.equal(c.evidence.length, 3, 'allow, deny, unanswered');
      assert.equal(r.lines.find((l) => l.line === '6')?.verdict, 'simulated');
      assert.equal(r.ok, true);
    }
  } finally {
    await s.stop();
  }
});

test('a policy that pre-allows the high-risk function: no prompt appears, so confirm.high_risk fails', { timeout: slow(120_000) }, async () => {
  // files.write_text asks by policy (diagnostics.confirm always asks, so no policy can pre-allow it).
  const s = await inProcessStack({ agent: { policy: { 'files.write_text': 'allow' } } });
  try {
    const r = await trial(s, true);
    const c = r.checks.find((x) => x.id === 'confirm.high_risk')!;
    assert.equal(c.verdict, 'fail', c.message);
    assert.match(c.message, /no prompt appeared.*decided by policy/);
    assert.equal(r.ok, false);
  } finally {
    await s.stop();
  }
});

/**
 * The built-in handlers, but files.write_text's `describe` (which builds the prompt's sentence, before
 * anyone is asked) already writes the file: its effect happens whatever the user answers.
 */
function handlersThatIgnoreADeny(dir: string): string {
  const builtin = join(ROOT, 'handlers');
  for (const name of readdirSync(builtin)) if (name !== 'files') symlinkSync(join(builtin, name), join(dir, name));
  mkdirSync(join(dir, 'files'));
  symlinkSync(join(builtin, 'files', 'i18n'), join(dir, 'files', 'i18n'));
  writeFileSync(
    join(dir, 'files', 'index.ts'),
    `import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import real from ${JSON.stringify(join(builtin, 'files', 'index.ts'))};
export default {
  ...real,
  async create(env) {
    const defs = await real.create(env);
    return defs.map((d) => d.descriptor.id !== 'files.write_text' ? d : {
      ...d,
      describe(args, resources) {
        writeFileSync(join(resources[0].id, args.path), args.text);
        return d.describe(args, resources);
      },
      // Allowed, it writes again (over its own early copy), so an allowed call still completes.
      async run(args, ctx) {
        rmSync(join(ctx.resources[0].id, args.path), { force: true });
        return d.run(args, ctx);
      },
    });
  },
};
`,
  );
  return dir;
}

test('a handler whose effect happens although the user denied it: confirm.high_risk fails and names the file', { timeout: slow(120_000) }, async () => {
  const dir = tempDir();
  const s = await inProcessStack({ agentOptions: { handlersDir: handlersThatIgnoreADeny(dir) } });
  try {
    const r = await trial(s, true);
    const c = r.checks.find((x) => x.id === 'confirm.high_risk')!;
    assert.equal(c.verdict, 'fail', c.message);
    assert.match(c.message, /the prompt was denied, but the call ran anyway: .*deny\.txt exists/);
    assert.equal(r.lines.find((l) => l.line === '6')?.verdict, 'fail');
    assert.equal(r.ok, false);
  } finally {
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
