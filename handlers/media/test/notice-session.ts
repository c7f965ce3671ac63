/**
 * Runs inside `dbus-run-session -- xvfb-run`: a real notification daemon (dunst) and a dbus monitor; a
 * photo through a real bridge and agent (in process; lavfi stands in for the camera), allowed in the
 * `ui` provider; prints whether "Camera in use by <requester>" reached the session bus, as JSON.
 */
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { inProcessStack, tempDir, until } from '../../../test/helpers/stack.js';
import { newCallId } from '../../../src/protocol/call-id.js';
import { LAVFI_CAMERA } from './peers.js';

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
  const s = await inProcessStack({ agent: { grants: { cameras: ['*'] }, confirmations: { provider: 'ui', timeout_ms: 60_000 }, handlers: { media: { backend: 'ffmpeg', probe: false, devices: [LAVFI_CAMERA] } } } });
  try {
    // This script answers prompts as the tray would: attached, with a heartbeat.
    const { answerer_id, heartbeat_ms } = s.running.consent.ui.attach('notice test');
    const beat = setInterval(() => s.running.consent.ui.heartbeat(answerer_id), heartbeat_ms);
    beat.unref();
    const requester = `Shelf assistant ${process.pid}`;
    const call_id = newCallId();
    const call = s.client.call('camera.capture_photo', {}, { call_id, confirm_timeout_ms: 60_000, requester: { kind: 'agent', id: 'agt', name: requester } });
    const q = await until(() => s.running.consent.queue.list().find((p) => p.view.call_id === call_id), 20_000, 'the prompt');
    s.running.consent.ui.answer(q!.view.prompt_id, { answer: 'allow_once', scope: 'session' });
    const { record } = await call;
    result['state'] = record.outcome?.state;
    await until(() => readFileSync(monLog, 'utf8').includes(`Camera in use by ${requester}`), 5000, 'Notify on the bus').catch(() => undefined);
    result['seen'] = readFileSync(monLog, 'utf8').includes(`Camera in use by ${requester}`);
  } finally {
    await s.stop();
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
