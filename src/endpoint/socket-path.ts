/**
 * Where the agent's Unix socket (named pipe on Windows) lives, and how a stale one is told from a live one.
 */
import { connect } from 'node:net';
import { mkdir, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { tmpdir, userInfo } from 'node:os';

/** True for a Windows named-pipe path. */
export function isNamedPipe(p: string): boolean {
  return p.startsWith('\\\\.\\pipe\\') || p.startsWith('\\\\?\\pipe\\');
}

/**
 * The default socket: `$XDG_RUNTIME_DIR/aios-device/agent.sock` on Linux, a per-user folder under the temp
 * dir on macOS, and a per-user named pipe on Windows, so several users on one machine never collide.
 */
export function defaultSocketPath(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  const user = (() => {
    try {
      return userInfo().username.replace(/[^A-Za-z0-9_.-]/g, '_');
    } catch {
      return 'user';
    }
  })();
  if (platform === 'win32') return `\\\\.\\pipe\\aios-device-${user}`;
  const runtime = env['XDG_RUNTIME_DIR'];
  if (runtime) return join(runtime, 'aios-device', 'agent.sock');
  return join(tmpdir(), `aios-device-${user}`, 'agent.sock');
}

/** Prepares a socket path: a 0700 parent, and a stale socket removed; throws when another agent answers on it. */
export async function prepareSocketPath(path: string): Promise<void> {
  if (isNamedPipe(path)) return;
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const alive = await new Promise<boolean>((resolve) => {
    const s = connect(path);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
  if (alive) throw new Error(`another agent is already listening on ${path}`);
  await unlink(path).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT') throw e;
  });
}
