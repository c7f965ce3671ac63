/**
 * Where the agent's Unix socket (named pipe on Windows) lives, and how a stale one is told from a live one.
 */
import { connect } from 'node:net';
import { lstat, mkdir, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { osUserName } from '../identity/os-user.js';
import { coreMessage } from '../i18n/index.js';
import { SaidError } from '../i18n/said.js';

/** True for a Windows named-pipe path. */
export function isNamedPipe(p: string): boolean {
  return p.startsWith('\\\\.\\pipe\\') || p.startsWith('\\\\?\\pipe\\');
}

/**
 * The default socket: `$XDG_RUNTIME_DIR/aios-device/agent.sock` on Linux, a per-user folder under the temp
 * dir on macOS, and a per-user named pipe on Windows, so several users on one machine never collide.
 */
export function defaultSocketPath(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  const user = osUserName()?.replace(/[^A-Za-z0-9_.-]/g, '_') ?? 'user';
  if (platform === 'win32') return `\\\\.\\pipe\\aios-device-${user}`;
  const runtime = env['XDG_RUNTIME_DIR'];
  if (runtime) return join(runtime, 'aios-device', 'agent.sock');
  return join(tmpdir(), `aios-device-${user}`, 'agent.sock');
}

/**
 * Prepares a socket path: a parent folder (made 0700) that is a real folder of this user's that nobody else
 * can write to, and a stale socket removed; throws when another agent answers on it.
 */
export async function prepareSocketPath(path: string): Promise<void> {
  if (isNamedPipe(path)) return;
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // mkdir leaves an existing folder as it is: one that another user made first (the default folder's name
  // is predictable) or can write to would let them replace the socket with their own.
  const st = await lstat(dir);
  const uid = process.getuid?.();
  // The sentences reach the person starting the agent: catalogue messages, said in their language.
  if (!st.isDirectory()) throw new SaidError(coreMessage('core.socket.not_a_folder', { dir }));
  if (uid !== undefined && st.uid !== uid) throw new SaidError(coreMessage('core.socket.other_user', { dir, uid: st.uid }));
  if ((st.mode & 0o022) !== 0) throw new SaidError(coreMessage('core.socket.writable', { dir, mode: (st.mode & 0o7777).toString(8) }));
  const alive = await new Promise<boolean>((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
  if (alive) throw new SaidError(coreMessage('core.socket.in_use', { path }));
  await unlink(path).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT') throw e;
  });
}
