/**
 * A session bus with a real notification daemon (dunst) and a dbus monitor on its `Notify` calls, for
 * scripts that run inside `dbus-run-session -- xvfb-run` (test/handlers/notify-session.ts,
 * handlers/media/test/notice-session.ts). The script's checks fill `result`, which is printed as one
 * line `RESULT <json>` for the test that spawned it; a fault is put in `result.fault`.
 */
import { spawn, execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir, until } from '../helpers/stack.js';

/** What a session script sees of the bus. */
export interface NotificationBus {
  /** True once a Notify call carrying `text` reached the bus (waits up to 5 s; false if it never did). */
  seen(text: string): Promise<boolean>;
  /** Everything the monitor has printed so far. */
  log(): string;
}

/** Runs `body` with the daemon up, prints `RESULT <json>` and exits the process. */
export async function runOnNotificationBus(body: (bus: NotificationBus, result: Record<string, unknown>) => Promise<void>): Promise<never> {
  const dir = tempDir();
  const monLog = join(dir, 'mon.log');
  const mon = spawn('sh', ['-c', `exec dbus-monitor --session "type=method_call,interface=org.freedesktop.Notifications,member=Notify" > ${monLog}`], { stdio: 'ignore' });
  const dunst = spawn('dunst', [], { stdio: 'ignore' });
  const result: Record<string, unknown> = {};
  const log = () => readFileSync(monLog, 'utf8');
  const bus: NotificationBus = {
    log,
    async seen(text) {
      await until(() => log().includes(text), 5000, 'Notify on the bus').catch(() => undefined);
      return log().includes(text);
    },
  };
  try {
    await until(() => {
      try {
        return execFileSync('dbus-send', ['--session', '--print-reply', '--dest=org.freedesktop.DBus', '/', 'org.freedesktop.DBus.NameHasOwner', 'string:org.freedesktop.Notifications']).toString().includes('true');
      } catch {
        return false;
      }
    }, 10_000, 'notification daemon');
    await body(bus, result);
  } catch (e) {
    result['fault'] = String(e);
  } finally {
    dunst.kill();
    mon.kill();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write('RESULT ' + JSON.stringify(result) + '\n');
  process.exit(0);
}
