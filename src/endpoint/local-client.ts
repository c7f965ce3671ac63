/**
 * A JSON-RPC client for the running agent's local endpoint, found through `<data_dir>/endpoint.json` and
 * authenticated with `<data_dir>/local-token`. Used by CLI commands that act on a running agent. It talks
 * over the agent's Unix socket when `endpoint.json` names one that the token's owner owns (its folder is
 * private to that user, so no other user can stand in for it, on any system), else over loopback TCP after
 * the listener-owner check (Linux only).
 */
import { lstat, readFile, stat } from 'node:fs/promises';
import { request } from 'node:http';
import { join } from 'node:path';
import { RpcError, WireError } from '../protocol/errors.js';
import { LOCAL_TOKEN_FILE } from './local-token.js';
import { loopbackListenerUid } from './listener-owner.js';

/**
 * Whether the listener at `http` may be sent the local token of `dataDir`: it must belong to the OS user
 * who owns the token file (the agent's user). Another user who listens on that port (a stale
 * `endpoint.json`, or the configured port taken before the agent started) is not the agent. Where the
 * system does not say who owns a listener (not Linux), the check cannot be made and passes.
 */
export async function listenerIsTheAgent(http: string, dataDir: string): Promise<boolean> {
  const owner = await loopbackListenerUid(http);
  if (owner === undefined) return true;
  if (owner === null) return false;
  return owner === (await stat(join(dataDir, LOCAL_TOKEN_FILE))).uid;
}

/** Where the running agent answers: its loopback URL, and its Unix socket when that is the one to use. */
export interface LocalAgentAddress {
  http: string;
  /** The agent's socket (checked: a socket owned by the token's owner); requests go there, not to `http`. */
  socket?: string;
  token: string;
}

/** The running agent found by {@link findRunningAgent}. */
export interface RunningLocalAgent extends LocalAgentAddress {
  /** The whole of its `endpoint.json`. */
  endpoint: Record<string, unknown>;
  /** Its `GET /health` answer. */
  health: Record<string, unknown>;
}

/**
 * Whether `path` is a socket the token's owner owns (Windows named pipes have no owner to read: they are
 * used as named). A socket of another user, or a file that is not a socket, is not the agent's.
 */
async function socketIsTheAgents(path: string, dataDir: string): Promise<boolean> {
  if (process.platform === 'win32') return path.startsWith('\\\\.\\pipe\\');
  try {
    const st = await lstat(path);
    return st.isSocket() && st.uid === (await stat(join(dataDir, LOCAL_TOKEN_FILE))).uid;
  } catch {
    return false;
  }
}

/** One HTTP exchange with the agent, over its socket when it has one, else over loopback TCP. */
function exchange(agent: Pick<LocalAgentAddress, 'http' | 'socket'>, method: string, path: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const common = { method, headers, signal: AbortSignal.timeout(timeoutMs) };
    const u = new URL(path, agent.http);
    const where = agent.socket ? { socketPath: agent.socket, path } : { hostname: u.hostname.replace(/^\[|\]$/g, ''), port: u.port, path: u.pathname + u.search };
    const req = request({ ...where, ...common }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * The running agent's address (and the whole of its `endpoint.json`), or undefined when none is
 * recorded or it does not answer.
 */
export async function findRunningAgent(dataDir: string): Promise<RunningLocalAgent | undefined> {
  try {
    const ep = JSON.parse(await readFile(join(dataDir, 'endpoint.json'), 'utf8')) as { http?: unknown; socket?: unknown; pid?: unknown };
    if (typeof ep.http !== 'string') return undefined;
    if (typeof ep.pid === 'number') {
      try {
        process.kill(ep.pid, 0);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ESRCH') return undefined;
      }
    }
    const socket = typeof ep.socket === 'string' && (await socketIsTheAgents(ep.socket, dataDir)) ? ep.socket : undefined;
    // Nothing goes to a listener of another OS user, not even /health: it is not the agent.
    if (!socket && !(await listenerIsTheAgent(ep.http, dataDir))) return undefined;
    const token = (await readFile(join(dataDir, LOCAL_TOKEN_FILE), 'utf8')).trim();
    const address: LocalAgentAddress = { http: ep.http, token, ...(socket ? { socket } : {}) };
    const health = await exchange(address, 'GET', '/health', {}, undefined, 2000).catch(() => undefined);
    if (!health || health.status !== 200) return undefined;
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(health.text) as Record<string, unknown>;
    } catch {
      /* an empty health answer */
    }
    return { ...address, endpoint: ep, health: body };
  } catch {
    return undefined;
  }
}

/** Calls one method on the local endpoint; throws the revived WireError/RpcError on an error answer. */
export async function callLocal(agent: LocalAgentAddress, method: string, params: unknown, timeoutMs = 30_000): Promise<unknown> {
  const res = await exchange(agent, 'POST', '/rpc', { 'Content-Type': 'application/json', Authorization: `Bearer ${agent.token}` }, JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), timeoutMs);
  const body = JSON.parse(res.text) as { result?: unknown; error?: { code: number; message: string; data?: unknown } };
  if (body.error) throw WireError.fromPlain(body.error) ?? new RpcError(body.error.code, body.error.message, body.error.data);
  return body.result;
}
