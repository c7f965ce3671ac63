/**
 * What runs a JavaScript adapter's host process (resources/adapter-host/host.mjs): which Node.js, and which
 * copy of the host. From a checkout or an npm install (the CLI, `aios-device run`), the agent's own `node`
 * and the host beside the project's node_modules. In the tray app, Electron's binary cannot be that Node
 * (the packaged app's `runAsNode` fuse is off, build/electron-builder.yml) and nothing outside the app can
 * read the packages inside app.asar, so the host is the self-contained bundle shipped unpacked in
 * `<resources>/adapter-host/` (scripts/build-adapter-host.mjs), run by a Node.js 20 or newer found on the
 * machine: `AIOS_ADAPTER_NODE`, else `node` on PATH. Without one, JavaScript adapters are unavailable and say
 * why (MCP-server adapters run their own command and need none of this).
 */
import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../version.js';
import { AdapterProblem } from './adapter-problem.js';

/** The host as it is in the project (its packages resolve from the project's node_modules). */
export const ADAPTER_HOST_DIR = join(PROJECT_ROOT, 'resources', 'adapter-host');

/** The oldest Node.js major that runs the host (the project's own floor). */
export const HOST_NODE_MIN_MAJOR = 20;

/** The host's Node.js, its folder, and the packages it needs beside it (none for the bundle). */
export interface HostRuntime {
  node: string;
  dir: string;
  nodeModules?: string;
}

/** Where this process runs: Electron (and its resources folder) or plain Node. Parameters for tests. */
export interface HostRuntimeEnv {
  electron: boolean;
  resourcesPath?: string | undefined;
  env: NodeJS.ProcessEnv;
}

const here = (): HostRuntimeEnv => ({ electron: Boolean(process.versions['electron']), resourcesPath: (process as { resourcesPath?: string }).resourcesPath, env: process.env });

/** The major version `node --version` reports for `file`, or why it cannot be used. */
async function nodeMajor(file: string): Promise<number | string> {
  try {
    const { stdout } = await promisify(execFile)(file, ['--version'], { timeout: 10_000, env: { PATH: '/usr/bin:/bin' } });
    const m = /^v(\d+)\./.exec(stdout.trim());
    return m ? Number(m[1]) : `${file} --version printed ${JSON.stringify(stdout.trim().slice(0, 40))}`;
  } catch (e) {
    return `${file} cannot be run: ${(e as Error).message.split('\n')[0]}`;
  }
}

/** `node` in the folders of `path`, first found. */
async function nodeOnPath(path: string | undefined): Promise<string | undefined> {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const p = join(dir, 'node');
    if (await access(p, constants.X_OK).then(() => true, () => false)) return p;
  }
  return undefined;
}

/**
 * The runtime of the host in this process's situation. Throws AdapterProblem `core.adapter.no_host_node`
 * when the tray app finds no usable Node.js (none, or one older than {@link HOST_NODE_MIN_MAJOR}).
 */
export async function hostRuntime(where: HostRuntimeEnv = here()): Promise<HostRuntime> {
  if (!where.electron) return { node: process.execPath, dir: ADAPTER_HOST_DIR, nodeModules: join(PROJECT_ROOT, 'node_modules') };
  const bundled = where.resourcesPath ? join(where.resourcesPath, 'adapter-host') : undefined;
  // The unpackaged shell (`electron .` from a checkout) has the project's host and node_modules as files.
  const host = bundled && existsSync(join(bundled, 'host.mjs')) ? { dir: bundled } : { dir: ADAPTER_HOST_DIR, nodeModules: join(PROJECT_ROOT, 'node_modules') };
  const chosen = where.env['AIOS_ADAPTER_NODE'] || (await nodeOnPath(where.env['PATH']));
  if (!chosen) throw new AdapterProblem('core.adapter.no_host_node', { min: HOST_NODE_MIN_MAJOR, detail: 'no node on PATH and AIOS_ADAPTER_NODE is not set' });
  const major = await nodeMajor(chosen);
  if (typeof major === 'string') throw new AdapterProblem('core.adapter.no_host_node', { min: HOST_NODE_MIN_MAJOR, detail: major });
  if (major < HOST_NODE_MIN_MAJOR) throw new AdapterProblem('core.adapter.no_host_node', { min: HOST_NODE_MIN_MAJOR, detail: `${chosen} is Node.js ${major}` });
  return { node: chosen, ...host };
}
