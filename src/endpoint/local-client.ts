/**
 * A JSON-RPC client for the running agent's local endpoint, found through `<data_dir>/endpoint.json` and
 * authenticated with `<data_dir>/local-token`. Used by CLI commands that act on a running agent.
 */
import { readFile, stat } from 'node:fs/promises';
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

/**
 * The running agent's address (and the whole of its `endpoint.json`), or undefined when none is
 * recorded or it does not answer.
 */
export async function findRunningAgent(dataDir: string): Promise<{ http: string; token: string; endpoint: Record<string, unknown>; health: Record<string, unknown> } | undefined> {
  try {
    const ep = JSON.parse(await readFile(join(dataDir, 'endpoint.json'), 'utf8')) as { http?: unknown; pid?: unknown };
    if (typeof ep.http !== 'string') return undefined;
    if (typeof ep.pid === 'number') {
      try {
        process.kill(ep.pid, 0);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ESRCH') return undefined;
      }
    }
    // Nothing goes to a listener of another OS user, not even /health: it is not the agent.
    if (!(await listenerIsTheAgent(ep.http, dataDir))) return undefined;
    const token = (await readFile(join(dataDir, LOCAL_TOKEN_FILE), 'utf8')).trim();
    const health = await fetch(`${ep.http}/health`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
    if (!health?.ok) return undefined;
    const body = (await health.json().catch(() => ({}))) as Record<string, unknown>;
    return { http: ep.http, token, endpoint: ep, health: body };
  } catch {
    return undefined;
  }
}

/** Calls one method on the local endpoint; throws the revived WireError/RpcError on an error answer. */
export async function callLocal(agent: { http: string; token: string }, method: string, params: unknown, timeoutMs = 30_000): Promise<unknown> {
  const res = await fetch(`${agent.http}/rpc`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${agent.token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = (await res.json()) as { result?: unknown; error?: { code: number; message: string; data?: unknown } };
  if (body.error) throw WireError.fromPlain(body.error) ?? new RpcError(body.error.code, body.error.message, body.error.data);
  return body.result;
}
