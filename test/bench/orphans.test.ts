/**
 * A benchmark driver killed outright (SIGKILL: no handler of its own runs) leaves none of its processes
 * behind: its bench children end when the stdin pipe it held closes (bench/child.ts), and socat ends by
 * its parent-death signal (test/peers/serial-pty.ts, through util-linux's setpriv).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const DRIVER = fileURLToPath(new URL('./fixtures/orphan-driver.ts', import.meta.url));

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Resolves once `pid` is gone; checks on every tick of a short interval, up to `ms`. */
function gone(pid: number, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const deadline = Date.now() + ms;
    const t = setInterval(() => {
      if (!alive(pid) || Date.now() > deadline) {
        clearInterval(t);
        resolve(!alive(pid));
      }
    }, 20);
  });
}

test('a benchmark driver killed with SIGKILL leaves no child process or socat running', { timeout: 120_000, skip: !existsSync('/usr/bin/setpriv') && 'util-linux setpriv is missing' }, async (t) => {
  const driver = spawn(process.execPath, ['--import', 'tsx', DRIVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise<string>((resolve, reject) => {
    createInterface({ input: driver.stdout! }).once('line', resolve);
    driver.once('exit', (code) => reject(new Error(`the driver exited (${code}) before starting its processes`)));
  });
  const { socat, scale, dir } = JSON.parse(first) as { socat: number; scale: number; dir: string };
  t.after(() => {
    for (const pid of [socat, scale]) if (alive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  assert.ok(alive(socat) && alive(scale), 'socat and the scale run while the driver does');
  driver.kill('SIGKILL');
  await new Promise((r) => driver.once('exit', r));
  assert.equal(await gone(scale, 30_000), true, 'the scale child outlived its driver');
  assert.equal(await gone(socat, 30_000), true, 'socat outlived its driver');
});
