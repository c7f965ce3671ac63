/**
 * Runs inside `dbus-run-session -- xvfb-run`: starts a real notification daemon (dunst) and a dbus
 * monitor, sends device.notify through a real bridge and agent, and prints what the monitor saw as JSON.
 */
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { inProcessStack, tempDir, until } from '../helpers/stack.js';
import { notifyPromptWaiting } from '../../src/consent/notify.js';
import type { PromptView } from '../../src/consent/prompt.js';

const dir = tempDir();
const monLog = join(dir, 'mon.log');
const mon = spawn('sh', ['-c', `exec dbus-monitor --session "type=method_call,interface=org.freedesktop.Notifications,member=Notify" > ${monLog}`], { stdio: 'ignore' });
const dunst = spawn('dunst', [], { stdio: 'ignore' });
const result: Record<string, unknown> = {};
try {
  await until(() => {
    try {
      return execFileSync('dbus-send', ['--session', '--print-reply', '--dest=org.freedesktop.DBus', '/', 'org.freedesktop.DBus.NameHasOwner', 'string:org.freedesktop.Notifications']).toString().includes('true');
    } catch {
      return false;
    }
  }, 10_000, 'notification daemon');
  const s = await inProcessStack();
  try {
    const title = 'Courier arrived ' + process.pid;
    const { record } = await s.client.call('device.notify', { title, message: 'At the front desk' });
    result['state'] = record.outcome?.state;
    result['error'] = record.outcome?.error?.type ?? null;
    await until(() => readFileSync(monLog, 'utf8').includes(title), 5000, 'Notify on the bus').catch(() => undefined);
    result['seen'] = readFileSync(monLog, 'utf8').includes(title);
  } finally {
    await s.stop();
  }
  // The notice that a confirmation prompt waits: who asks and what, no argument values.
  notifyPromptWaiting({ function_name: 'Write a text file', requester: { kind: 'agent', id: 'planner-1', name: 'Trip planner' } } as unknown as PromptView);
  await until(() => readFileSync(monLog, 'utf8').includes('Trip planner (agent) asks to: Write a text file'), 5000, 'prompt notice').catch(() => undefined);
  const seen = readFileSync(monLog, 'utf8');
  result['prompt_notice'] = seen.includes('AIOS Device: confirmation needed') && seen.includes('Trip planner (agent) asks to: Write a text file');
  // An outdated client stops reconnecting and tells the user an update is needed.
  const old = await inProcessStack({ bridge: { min_client_version: '99.0.0' }, connect: false });
  try {
    await until(() => old.agent.session?.fatal, 5000, 'fatal stop');
    await until(() => readFileSync(monLog, 'utf8').includes('needs an update'), 5000, 'update notice').catch(() => undefined);
    result['update_notice'] = readFileSync(monLog, 'utf8').includes('needs an update');
  } finally {
    await old.stop();
  }
} catch (e) {
  result['fault'] = String(e);
} finally {
  dunst.kill();
  mon.kill();
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write('RESULT ' + JSON.stringify(result) + '\n');
process.exit(0);
