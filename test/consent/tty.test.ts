/**
 * The terminal prompt, driven in a real pseudo-terminal: a tmux session runs the fixture, the test reads
 * the screen with `capture-pane` and types answers with `send-keys`.
 */
import { test, after } from 'node:test';
import { until } from '../helpers/wait.js';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { tempDir } from './helpers.js';

const FIXTURE = path.resolve(import.meta.dirname, 'fixtures', 'tty-prompt.ts');
const tmp = tempDir('aios-consent-tty-');
// The tmux server's socket lives in the test's temp dir, so nothing is left in /tmp/tmux-*.
const SOCKET = path.join(tmp.dir, 'tmux.sock');
const tmux = (...args: string[]): string => execFileSync('tmux', ['-S', SOCKET, '-f', '/dev/null', ...args], { encoding: 'utf8' });
let sessions = 0;

after(() => {
  try {
    tmux('kill-server');
  } catch {
    // no server left
  }
  tmp.cleanup();
});

/** Starts the fixture in a new tmux session; returns helpers bound to it. */
function start(opts: { level?: string; timeoutMs?: number; calls?: number; dataDir?: string; resources?: boolean; lang?: string; runtime?: string } = {}) {
  const name = `s${++sessions}`;
  const dataDir = opts.dataDir ?? path.join(tmp.dir, `data-${name}`);
  const result = path.join(tmp.dir, `result-${name}.jsonl`);
  const cmd = ['node', '--import', 'tsx', FIXTURE, dataDir, result, opts.level ?? 'high', String(opts.timeoutMs ?? 60_000), String(opts.calls ?? 1)]
    .map((a) => `'${a}'`)
    .join(' ');
  const env = (opts.resources ? 'AIOS_TEST_RESOURCES=1 ' : '') + (opts.runtime ? `AIOS_TEST_RUNTIME='${opts.runtime}' ` : '') + (opts.lang ? `LC_ALL=${opts.lang} LANG=${opts.lang} ` : 'LC_ALL=C.UTF-8 LANG=C.UTF-8 ');
  tmux('new-session', '-d', '-s', name, '-x', '160', '-y', '50', '-c', process.cwd(), `sh -c "${env}${cmd.replace(/"/g, '\\"')}; echo FIXTURE-EXITED; sleep 600"`);
  const screen = (): string => tmux('capture-pane', '-p', '-t', name, '-S', '-100');
  const waitFor = (pred: (s: string) => boolean, what: string): Promise<string> =>
    until(() => { const s = screen(); return pred(s) ? s : undefined; }, 20_000, () => `${what}; screen:\n${screen()}`, 50);
  const results = async (n: number): Promise<{ prompted: boolean; confirmation: Record<string, unknown>; error: string | null }[]> => {
    await waitFor((s) => s.includes('FIXTURE-EXITED'), 'the fixture to exit');
    const lines = fs.readFileSync(result, 'utf8').trim().split('\n');
    assert.equal(lines.length, n, screen());
    return lines.map((l) => JSON.parse(l));
  };
  const keys = (...k: string[]): void => void tmux('send-keys', '-t', name, ...k);
  return { name, dataDir, screen, waitFor, results, keys, pidFile: `${result}.pid` };
}

// The whole prompt, countdown line included (it is drawn after the answer keys).
const PROMPT = (s: string) => s.includes('[a] allow once') && /Time left: \d+ s/.test(s);

test('tty: the prompt shows who asks what, the risk and a countdown; "a" allows once', async () => {
  const t = start();
  const s = await t.waitFor(PROMPT, 'the prompt');
  assert.match(s, /confirmation needed/);
  // No runtime attested (a 1.1 bridge): the runtime's own claim is shown as a claim only.
  assert.match(s, /An unverified runtime \(says it is "Front-desk assistant"\) in workspace ws_demo asks to:/);
  assert.match(s, /Write a text file/);
  assert.match(s, /Overwrite report\.docx in out \(14 KB\)/);
  assert.match(s, /Risk: permission level: high · can delete or overwrite data/);
  assert.match(s, /Time left: \d+ s/);
  assert.doesNotMatch(s, /hello/, 'argument values stay hidden until asked for');
  t.keys('a');
  const [r] = await t.results(1);
  assert.deepEqual(r, { prompted: true, confirmation: { required: true, decision: 'allowed', decided_by: 'user', remembered: false }, error: null });
  assert.match(t.screen(), /Allowed once\./);
});

test('tty: the runtime the bridge attested is named first, the claimed requester only as "says it is", in English and Chinese', async () => {
  const en = start({ runtime: 'Front desk' });
  assert.match(await en.waitFor(PROMPT, 'the prompt'), /Front desk \(says it is "Front-desk assistant"\) in workspace ws_demo asks to:/);
  en.keys('d');
  await en.results(1);
  const zh = start({ runtime: 'Front desk', lang: 'zh_CN.UTF-8' });
  assert.match(await zh.waitFor((x) => x.includes('[a]'), 'the prompt'), /Front desk（自称“Front-desk assistant”）/);
  zh.keys('d');
  await zh.results(1);
});

test('tty: "v" shows the full arguments, "d" denies', async () => {
  const t = start();
  await t.waitFor(PROMPT, 'the prompt');
  t.keys('v');
  const s = await t.waitFor((x) => x.includes('Arguments:'), 'the arguments');
  assert.match(s, /"path": "\/srv\/out\/report\.docx"/);
  assert.match(s, /"content": "hello"/);
  t.keys('d');
  const [r] = await t.results(1);
  assert.equal(r!.error, 'user_rejected');
  assert.equal(r!.confirmation['decision'], 'denied');
});

test('tty: "r" then "f" remembers; the next call, in this run and the next, skips the prompt', async () => {
  const t = start({ calls: 2 });
  await t.waitFor(PROMPT, 'the prompt');
  t.keys('r');
  await t.waitFor((s) => s.includes('[s] this session or [f] forever'), 'the scope question');
  t.keys('f');
  const [first, second] = await t.results(2);
  assert.deepEqual(first!.confirmation, { required: true, decision: 'allowed', decided_by: 'user', remembered: true });
  assert.deepEqual(second, { prompted: false, confirmation: { required: true, decision: 'allowed', decided_by: 'remembered', remembered: true }, error: null });

  const again = start({ dataDir: t.dataDir });
  const [r] = await again.results(1);
  assert.equal(r!.prompted, false, 'an "always" decision survives a restart');
});

test('tty: a call that names resources shows them, and "remember" covers only them unless "any" is chosen', async () => {
  const only = start({ calls: 2, resources: true });
  const s = await only.waitFor(PROMPT, 'the prompt');
  assert.match(s, /Applies to: Out 0/);
  only.keys('r');
  await only.waitFor((x) => x.includes('[o] only Out 0 or [n] any resource'), 'the what question');
  only.keys('o');
  await only.waitFor((x) => x.includes('[s] this session or [f] forever'), 'the scope question');
  only.keys('s');
  await only.waitFor((x) => x.includes('Applies to: Out 1'), 'a prompt for the second folder: not covered');
  only.keys('d');
  const [a1, a2] = await only.results(2);
  assert.equal(a1!.confirmation['remembered'], true);
  assert.equal(a2!.prompted, true);

  const any = start({ calls: 2, resources: true });
  await any.waitFor(PROMPT, 'the prompt');
  any.keys('r');
  await any.waitFor((x) => x.includes('[n] any resource'), 'the what question');
  any.keys('n');
  await any.waitFor((x) => x.includes('[s] this session'), 'the scope question');
  any.keys('s');
  const [, b2] = await any.results(2);
  assert.equal(b2!.prompted, false, '"any" covers the next folder too');
  assert.equal(b2!.confirmation['decided_by'], 'remembered');
});

test('tty: "r" then "s" remembers for this run only', async () => {
  const t = start({ calls: 2 });
  await t.waitFor(PROMPT, 'the prompt');
  t.keys('r');
  await t.waitFor((s) => s.includes('[s] this session'), 'the scope question');
  t.keys('s');
  const [, second] = await t.results(2);
  assert.equal(second!.prompted, false);
  const again = start({ dataDir: t.dataDir });
  await again.waitFor(PROMPT, 'a fresh prompt in the next run');
  again.keys('d');
  await again.results(1);
});

test('tty: a critical function offers no remember and prompts on every call', async () => {
  const t = start({ level: 'critical', calls: 2 });
  const s = await t.waitFor(PROMPT, 'the prompt');
  assert.match(s, /this function asks every time/);
  assert.doesNotMatch(s, /allow & remember/);
  t.keys('r'); // ignored
  t.keys('a');
  await t.waitFor((x) => x.split('[a] allow once').length === 3, 'the second prompt');
  t.keys('a');
  const rs = await t.results(2);
  assert.deepEqual(rs.map((r) => [r.prompted, r.confirmation['decided_by']]), [[true, 'user'], [true, 'user']]);
});

test('tty: nobody answers → confirmation_timeout, and the screen says so', async () => {
  const t = start({ timeoutMs: 1500 });
  await t.waitFor(PROMPT, 'the prompt');
  const [r] = await t.results(1);
  assert.equal(r!.error, 'confirmation_timeout');
  assert.match(t.screen(), /Timed out: denied\./);
});

test('tty: cancelling the call withdraws the prompt; keys typed afterwards do nothing', async () => {
  const t = start();
  await t.waitFor(PROMPT, 'the prompt');
  process.kill(Number(fs.readFileSync(t.pidFile, 'utf8')), 'SIGUSR2');
  const [r] = await t.results(1);
  assert.equal(r!.error, 'cancelled');
  assert.equal(r!.confirmation['decision'], 'withdrawn');
  assert.match(t.screen(), /Withdrawn: the call was cancelled\./);
});

test('tty: q closes the prompt: a deny that is not remembered', async () => {
  const t = start({ calls: 2 });
  await t.waitFor(PROMPT, 'the prompt');
  t.keys('q');
  await t.waitFor((x) => x.split('[a] allow once').length === 3, 'the second prompt (nothing remembered)');
  t.keys('a');
  const [first] = await t.results(2);
  assert.deepEqual([first!.error, first!.confirmation['remembered']], ['user_rejected', false]);
});

test('tty: in a Chinese locale the prompt speaks Chinese, from the zh-CN catalogue', async () => {
  const t = start({ lang: 'zh_CN.UTF-8' });
  const s = await t.waitFor((x) => x.includes('[a] 允许一次') && /剩余时间：\d+ 秒/.test(x), 'the Chinese prompt');
  assert.match(s, /AIOS Device：需要确认/);
  assert.match(s, /工作空间 ws_demo 中的 未经验证的运行时（自称“Front-desk assistant”） 请求：/);
  assert.match(s, /风险：权限级别：高 · 可能删除或覆盖数据/);
  assert.doesNotMatch(s, /Time left|allow once|Risk:/);
  t.keys('a');
  const after = await t.waitFor((x) => x.includes('已允许一次。'), 'the Chinese answer line');
  assert.ok(after.includes('已允许一次。'));
  const [r] = await t.results(1);
  assert.equal(r!.error, null);
});
