/**
 * What a serial grant may hand to the port pool (issue 27, finding 1): checked before consent and before
 * the port is opened, so that a `*` grant cannot be used to read the user's terminal, write a regular file
 * or probe which paths exist.
 * - A `*` grant covers only ports the OS lists as serial ports, after resolving links: on Linux a
 *   character device whose `/sys/dev/char/<major>:<minor>` is a tty with a `device` behind it (so never
 *   `/dev/pts/*`, `/dev/tty`, `/dev/console` or the virtual consoles), and not a `ttyS*` whose `type` is 0
 *   (no UART there); elsewhere a port serialport's `list()` names. Nothing is opened to decide.
 * - An explicit grant (the admin or the user named this path: a socat, ser2net or rfcomm port) may be a
 *   pseudo-terminal, but after resolving links it must be a character device that is a terminal, and
 *   never `/dev/tty`, `/dev/console` or the agent's own controlling terminal. A path that does not exist
 *   passes (the open reports `unplugged`: the admin named it, there is nothing to learn).
 */
import { constants, promises as fs, readFileSync, type Stats } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { isatty } from 'node:tty';
import { portKey } from './listing.js';

/** Why a path is refused: a stable rule name and an English sentence naming the path and the rule. */
export interface PortRefusal {
  rule: 'not_a_listed_port' | 'not_a_character_device' | 'not_a_terminal' | 'controlling_terminal' | 'no_uart';
  message: string;
}

/** Where the checks read the system (tests point them elsewhere only for logic no real device shows). */
export interface PortCheckEnv {
  platform: NodeJS.Platform;
  /** The sysfs root (`/sys`). */
  sys: string;
  /** The ports serialport lists (macOS and Windows, for `*` grants). */
  list?: () => Promise<readonly { path: string }[]>;
}

const defaultEnv = (): PortCheckEnv => ({ platform: process.platform, sys: '/sys' });

/** Linux's split of a `dev_t` (glibc's gnu_dev_major/minor). */
export function majorMinor(rdev: number): [number, number] {
  const d = BigInt(rdev);
  const major = Number(((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn));
  const minor = Number((d & 0xffn) | ((d >> 12n) & ~0xffn));
  return [major, minor];
}

/** The device number of this process's controlling terminal (`/proc/self/stat` tty_nr), if any. */
export function controllingTerminal(): [number, number] | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name (which may hold spaces and parentheses): state ppid pgrp session tty_nr.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ttyNr = Number(rest[4]);
    if (!Number.isInteger(ttyNr) || ttyNr === 0) return undefined;
    return [(ttyNr >> 8) & 0xfff, (ttyNr & 0xff) | ((ttyNr >> 12) & 0xfff00)];
  } catch {
    return undefined;
  }
}

const kindOf = (st: Stats): string => (st.isFile() ? 'a regular file' : st.isDirectory() ? 'a folder' : st.isFIFO() ? 'a FIFO' : st.isBlockDevice() ? 'a block device' : 'a socket');

/**
 * Checks a requested port under the grant that covers it (`explicit`: the grant names this very path).
 * Under `*` every refusal is the same sentence, so that it tells nothing about what the path is or whether
 * it exists.
 */
export async function checkPort(path: string, explicit: boolean, env: PortCheckEnv = defaultEnv()): Promise<PortRefusal | undefined> {
  if (env.platform === 'win32') return checkWindows(path, explicit, env);
  if (explicit) return checkNamed(path, env);
  const notListed: PortRefusal = {
    rule: 'not_a_listed_port',
    message: `${path} is not a serial port the OS lists; a "*" grant covers only those. To use a virtual port, grant its exact path under grants.serial.`,
  };
  let st: Stats;
  try {
    st = await fs.stat(await fs.realpath(path));
  } catch {
    return notListed;
  }
  if (!st.isCharacterDevice()) return notListed;
  if (env.platform !== 'linux') return listedElsewhere(path, env, notListed);
  const [major, minor] = majorMinor(st.rdev);
  if (isControlling(major, minor)) return notListed;
  const tty = await sysfsTty(env.sys, major, minor);
  // A tty with no device behind it (ptys, consoles, VTs), or a serial-core port with no UART (type 0).
  if (!tty?.hasDevice || tty.type === '0') return notListed;
  return undefined;
}

/** /dev/tty, /dev/console, or the agent's own controlling terminal. */
function isControlling(major: number, minor: number): boolean {
  const own = controllingTerminal();
  return (major === 5 && (minor === 0 || minor === 1)) || (own !== undefined && own[0] === major && own[1] === minor);
}

/** An explicitly granted path: a character device that is a terminal, not a controlling one. */
async function checkNamed(path: string, env: PortCheckEnv): Promise<PortRefusal | undefined> {
  let real: string;
  let st: Stats;
  try {
    real = await fs.realpath(path);
    st = await fs.stat(real);
  } catch {
    return undefined; // absent: the admin named it; the open says unplugged
  }
  if (!st.isCharacterDevice()) return { rule: 'not_a_character_device', message: `${path} is ${kindOf(st)}, not a serial port; serial grants cover only character devices that are terminals.` };
  if (env.platform === 'linux') {
    const [major, minor] = majorMinor(st.rdev);
    if (isControlling(major, minor)) return { rule: 'controlling_terminal', message: `${path} is a controlling terminal or the console; no serial grant covers it.` };
    // A tty the kernel lists is a terminal without opening it (opening raises DTR, which resets many boards).
    if (await sysfsTty(env.sys, major, minor)) return undefined;
  } else if (real === '/dev/tty' || real === '/dev/console') {
    return { rule: 'controlling_terminal', message: `${path} is a controlling terminal or the console; no serial grant covers it.` };
  }
  return terminalCheck(path, real, st);
}

/** The tty sysfs knows under a device number: its name, whether a device is behind it, its serial `type`. */
async function sysfsTty(sys: string, major: number, minor: number): Promise<{ name: string; hasDevice: boolean; type?: string } | undefined> {
  const node = join(sys, 'dev', 'char', `${major}:${minor}`);
  let target: string;
  try {
    target = await fs.realpath(node);
  } catch {
    return undefined;
  }
  if (basename(dirname(target)) !== 'tty') return undefined;
  const hasDevice = await fs.access(join(target, 'device')).then(
    () => true,
    () => false,
  );
  const type = await fs.readFile(join(target, 'type'), 'utf8').then(
    (t) => t.trim(),
    () => undefined,
  );
  return { name: basename(target), hasDevice, ...(type !== undefined ? { type } : {}) };
}

/**
 * `isatty` on a descriptor of the device itself: opened read-only, non-blocking and without becoming our
 * controlling terminal, checked to be the node we stat'ed, closed before anything is written.
 */
async function terminalCheck(path: string, real: string, st: Stats): Promise<PortRefusal | undefined> {
  let fh: fs.FileHandle;
  try {
    fh = await fs.open(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    return undefined; // the port's own open will say why (busy, no permission, gone)
  }
  try {
    const now = await fh.stat();
    if (now.rdev !== st.rdev || now.ino !== st.ino || !now.isCharacterDevice()) return { rule: 'not_a_character_device', message: `${path} changed while it was checked; not opened.` };
    if (!isatty(fh.fd)) return { rule: 'not_a_terminal', message: `${path} is a character device but not a terminal; serial grants cover only terminals.` };
    return undefined;
  } finally {
    await fh.close();
  }
}

/** macOS and other Unixes: a `*` grant covers the ports serialport lists. */
async function listedElsewhere(path: string, env: PortCheckEnv, notListed: PortRefusal): Promise<PortRefusal | undefined> {
  const ports = (await env.list?.().catch(() => [])) ?? [];
  return ports.some((p) => portKey(env.platform, p.path) === portKey(env.platform, path)) ? undefined : notListed;
}

/** Windows: ports are COM names (or `\\.\COMn`); a `*` grant covers the ones serialport lists. */
async function checkWindows(path: string, explicit: boolean, env: PortCheckEnv): Promise<PortRefusal | undefined> {
  // An explicit grant may name a virtual port in the device namespace (com0com's `\\.\CNCA0`).
  if (explicit && /^\\\\\.\\[A-Za-z0-9_-]+$/.test(path)) return undefined;
  if (!/^(?:\\\\\.\\)?COM\d+$/i.test(path)) return { rule: 'not_a_character_device', message: `${path} is not a COM port; serial grants cover only COM ports.` };
  if (explicit) return undefined;
  return listedElsewhere(path, env, { rule: 'not_a_listed_port', message: `${path} is not a serial port the OS lists; a "*" grant covers only those.` });
}
