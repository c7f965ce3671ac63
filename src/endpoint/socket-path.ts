/**
 * Where the agent's Unix socket (named pipe on Windows) lives, and how a stale one is told from a live one.
 */
import { connect } from 'node:net';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, mkdtemp, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { osUserName } from '../identity/os-user.js';
import { coreMessage } from '../i18n/index.js';
import { SaidError } from '../i18n/said.js';

/** True for a Windows named-pipe path. */
export function isNamedPipe(p: string): boolean {
  return p.startsWith('\\\\.\\pipe\\') || p.startsWith('\\\\?\\pipe\\');
}

/** The longest Unix socket path in bytes: `sun_path` holds 108 bytes on Linux, 104 on macOS and the BSDs, less the NUL. */
export function maxSocketPathBytes(platform: NodeJS.Platform = process.platform): number {
  return platform === 'linux' || platform === 'android' ? 107 : 103;
}

/** The default socket, and whether its folder was made for this run (to remove at stop). */
export interface DefaultSocket {
  path: string;
  /** A folder with a random name made (0700) for this run: removed when the endpoint stops. */
  madeDir?: string;
}

/**
 * The default socket: `$XDG_RUNTIME_DIR/aios-device/agent.sock` where the session has a runtime folder;
 * otherwise `<data_dir>/agent.sock` inside the agent's private data folder (issue 27, finding 4: a folder
 * under /tmp with a predictable name could be taken by another user first and stop the agent), or, when
 * that path is longer than `sun_path` allows, a folder with a random name created 0700 under the temp dir
 * (`mkdtemp`). Windows: a per-user named pipe with a random part. Either way `endpoint.json` records it.
 */
export async function defaultSocket(dataDir: string, env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): Promise<DefaultSocket> {
  const user = osUserName()?.replace(/[^A-Za-z0-9_.-]/g, '_') ?? 'user';
  if (platform === 'win32') return { path: `\\\\.\\pipe\\aios-device-${user}-${randomBytes(8).toString('hex')}` };
  const runtime = env['XDG_RUNTIME_DIR'];
  if (runtime) return { path: join(runtime, 'aios-device', 'agent.sock') };
  const inData = join(dataDir, 'agent.sock');
  if (Buffer.byteLength(inData) <= maxSocketPathBytes(platform)) return { path: inData };
  const made = await mkdtemp(join(tmpdir(), `aios-device-${user}-`));
  return { path: join(made, 'agent.sock'), madeDir: made };
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
