/**
 * The sandbox a third-party adapter's process runs in (issue 35). On Linux: bubblewrap (`bwrap`), with a
 * fresh mount namespace holding only the adapter's verified code (read-only, `/adapter/code`, the working
 * directory), its own work folder (read-write, `/adapter/data`, also its HOME), the system's read-only
 * runtime paths, a private `/tmp`, `/proc` and a minimal `/dev`; no view of the agent's data folder, the
 * keychain, home folders or sockets; every namespace unshared (no network unless the manifest says
 * `network: true`); an environment reduced to an allow-list. Where bubblewrap cannot run, an adapter starts
 * only when the admin config allows it (`adapters.unsandboxed: allow`), with the same reduced environment.
 */
import { execFile } from 'node:child_process';
import { access, constants, lstat, readlink } from 'node:fs/promises';
import { delimiter, isAbsolute, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where the adapter's code and work folder are mounted in the sandbox. */
export const SANDBOX_CODE = '/adapter/code';
export const SANDBOX_DATA = '/adapter/data';
/** Where the project's adapter host (and the packages it imports) are mounted for JavaScript adapters. */
export const SANDBOX_HOST = '/adapter/host';
/** The PATH an adapter process gets. */
export const SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin';

/** Variables of the agent's environment an adapter may see (locale and time zone); nothing else passes. */
const PASSED_ENV = /^(LANG|LANGUAGE|LC_[A-Z_]+|TZ)$/;

/** System paths mounted read-only when they exist (the runtime: binaries, libraries, certificates, name service). */
const SYSTEM_RO = [
  '/usr',
  '/etc/alternatives',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/pki',
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/localtime',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
];
/** Top-level folders that are links into /usr on merged systems, or folders of their own elsewhere. */
const TOP_LEVEL = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** How an adapter process is started: the program, its arguments, its environment and working folder. */
export interface Launch {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** True when it runs under bubblewrap. */
  sandboxed: boolean;
}

/** What to run and with what it may work. */
export interface LaunchSpec {
  /** The verified private copy of the adapter's folder. */
  codeDir: string;
  /** The adapter's own work folder (created by the caller). */
  dataDir: string;
  /** The command: relative to the folder, or absolute. */
  command: string;
  args: readonly string[];
  /** Fixed variables from the signed manifest. */
  env?: Record<string, string>;
  network: boolean;
  /**
   * The adapter host of a JavaScript adapter: its folder and the packages it imports (read-only); no
   * packages for the self-contained bundle the tray app ships.
   */
  host?: { dir: string; nodeModules?: string };
}

/** Is `bwrap` usable here? The path, or why not (missing, or user namespaces refused). Probed once. */
let probed: Promise<{ bwrap: string } | { reason: string }> | undefined;

/** Finds `bwrap` on PATH and checks that it can make its namespaces (as this user, now). */
export function probeBubblewrap(): Promise<{ bwrap: string } | { reason: string }> {
  probed ??= (async () => {
    if (process.platform !== 'linux') return { reason: `no sandbox is implemented on ${process.platform}` };
    let bwrap: string | undefined;
    for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
      if (!dir || !isAbsolute(dir)) continue;
      const p = join(dir, 'bwrap');
      if (await access(p, constants.X_OK).then(() => true, () => false)) {
        bwrap = p;
        break;
      }
    }
    if (!bwrap) return { reason: 'bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)' };
    try {
      await run(bwrap, ['--ro-bind', '/', '/', '--unshare-all', '--die-with-parent', '--', '/bin/sh', '-c', 'exit 0'], { timeout: 10_000 });
      return { bwrap };
    } catch (e) {
      const err = e as { stderr?: string; message: string };
      return { reason: `bwrap cannot create its namespaces: ${(err.stderr || err.message).trim().split('\n')[0]}` };
    }
  })();
  return probed;
}

/** The environment an adapter process gets: the allow-list, its HOME and TMPDIR, then the manifest's own. */
export function adapterEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && PASSED_ENV.test(k)) env[k] = v;
  Object.assign(env, { PATH: SANDBOX_PATH, HOME: home, TMPDIR: '/tmp' }, extra);
  return env;
}

/** Replaces `{data}` in an argument with the work folder as the process sees it. */
function expand(arg: string, data: string): string {
  return arg.split('{data}').join(data);
}

/** The bubblewrap command line for a spec (the caller checked the command before). */
export async function bubblewrapLaunch(bwrap: string, spec: LaunchSpec): Promise<Launch> {
  const a: string[] = [];
  for (const p of SYSTEM_RO) a.push('--ro-bind-try', p, p);
  for (const top of TOP_LEVEL) {
    const st = await lstat(top).catch(() => undefined);
    if (!st) continue;
    if (st.isSymbolicLink()) a.push('--symlink', await readlink(top), top);
    else if (st.isDirectory()) a.push('--ro-bind', top, top);
  }
  // An absolute command outside /usr (e.g. a node in /opt) is mounted alone, read-only.
  const inside = !isAbsolute(spec.command);
  if (!inside && !spec.command.startsWith('/usr/')) a.push('--ro-bind', spec.command, spec.command);
  a.push('--proc', '/proc', '--dev', '/dev', '--tmpfs', '/tmp');
  a.push('--ro-bind', spec.codeDir, SANDBOX_CODE, '--bind', spec.dataDir, SANDBOX_DATA);
  // The host's script and its packages side by side (node resolves the packages from the script's folder).
  if (spec.host) {
    a.push('--ro-bind', join(spec.host.dir, 'host.mjs'), `${SANDBOX_HOST}/host.mjs`);
    if (spec.host.nodeModules) a.push('--ro-bind', spec.host.nodeModules, `${SANDBOX_HOST}/node_modules`);
  }
  a.push('--unshare-all');
  if (spec.network) a.push('--share-net');
  a.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--clearenv');
  for (const [k, v] of Object.entries(adapterEnv(SANDBOX_DATA, spec.env))) a.push('--setenv', k, v);
  a.push('--chdir', SANDBOX_CODE, '--');
  a.push(inside ? `${SANDBOX_CODE}/${spec.command}` : spec.command, ...spec.args.map((x) => expand(x, SANDBOX_DATA)));
  // bwrap itself gets a bare environment: it passes none of it on (--clearenv).
  return { command: bwrap, args: a, env: { PATH: SANDBOX_PATH }, cwd: '/', sandboxed: true };
}

/** The same process without a sandbox (only where the admin allowed it): the reduced environment, the copy as cwd. */
export function unsandboxedLaunch(spec: LaunchSpec): Launch {
  const env = adapterEnv(spec.dataDir, spec.env);
  const command = isAbsolute(spec.command) ? spec.command : join(spec.codeDir, spec.command);
  // Outside the sandbox the host runs from where it is installed (its packages resolve from there).
  const args = spec.host ? spec.args.map((x) => x.split(SANDBOX_HOST).join(spec.host!.dir)) : spec.args;
  // `env -i` so that nothing of the agent's environment is merged in by the transport.
  return {
    command: '/usr/bin/env',
    args: ['-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), command, ...args.map((x) => expand(x, spec.dataDir))],
    env: {},
    cwd: spec.codeDir,
    sandboxed: false,
  };
}
