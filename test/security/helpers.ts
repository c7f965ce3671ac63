/**
 * Attacker tools for the security tests: a raw device session speaking the wire protocol with any token
 * and identity (it answers invokes and cancels with forged outcomes), and the device login done by hand
 * over HTTP as a person in another workspace would.
 */
import { generateKeyPairSync } from 'node:crypto';
import WebSocket from 'ws';
import type { JWK } from 'jose';
import { JsonRpcPeer } from '../../src/protocol/peer.js';
import { WebSocketTransport } from '../../src/protocol/ws-transport.js';
import { METHODS, SUBPROTOCOL, type Outcome } from '../../src/protocol/messages.js';
import { DEVICE_CLIENT_ID, DEVICE_CODE_GRANT } from '../../src/protocol/oauth.js';

/** An identity a rogue session claims in hello. */
export interface Claimed {
  workspace_id: string;
  user_id: string;
  device_id: string;
}

/** A forged outcome: "completed" with output the attacker chose. */
export function forged(callId: string, fn: string): Outcome {
  const now = new Date().toISOString();
  return { call_id: callId, function: fn, state: 'completed', output: { forged: true }, output_valid: true, error: null, replayed: false, accepted_at: now, started_at: now, finished_at: now, duration_ms: 1 };
}

/** A raw device session; `answer` decides what it sends back for invoke and cancel (default: a forged outcome of that call). */
export class RogueDevice {
  readonly invokes: Record<string, unknown>[] = [];
  readonly cancels: Record<string, unknown>[] = [];
  closedWith: number | undefined;
  answer: (method: string, params: { call_id: string; function?: string }) => Outcome = (_m, p) => forged(p.call_id, p.function ?? 'diagnostics.wait');
  private constructor(readonly peer: JsonRpcPeer, readonly ws: WebSocket) {}

  /**
   * Connects and says hello; rejects when the upgrade or hello is refused. `opts.clientVersion` is the
   * version hello claims (default 9.9.9); `opts.functionList` answers `aios/function.list` (default: none).
   */
  static async connect(
    bridgeUrl: string,
    token: string,
    id: Claimed,
    opts: { clientVersion?: string; functionList?: (params: { cursor?: string }) => unknown } = {},
  ): Promise<RogueDevice> {
    const ws = new WebSocket(`${bridgeUrl.replace(/^http/, 'ws')}/v1/device`, SUBPROTOCOL, { headers: { Authorization: `Bearer ${token}` } });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_q, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    });
    const peer = new JsonRpcPeer(new WebSocketTransport(ws, 60_000), {});
    const rogue = new RogueDevice(peer, ws);
    ws.on('close', (code) => (rogue.closedWith = code));
    peer.onRequest(METHODS.invoke, (p) => {
      rogue.invokes.push(p as Record<string, unknown>);
      return rogue.answer(METHODS.invoke, p as { call_id: string; function: string });
    });
    peer.onRequest(METHODS.cancel, (p) => {
      rogue.cancels.push(p as Record<string, unknown>);
      return rogue.answer(METHODS.cancel, p as { call_id: string });
    });
    peer.onRequest(METHODS.functionList, (p) => (opts.functionList ? opts.functionList((p ?? {}) as { cursor?: string }) : { functions: [], revision: 0 }));
    peer.onRequest(METHODS.callGet, () => {
      throw new Error('unknown call');
    });
    // A refused hello leaves the socket open until the bridge closes it: close it here, so nothing waits on it.
    const hello = peer.request(
      METHODS.hello,
      {
        protocol_version: '1.0',
        client: { name: 'rogue', version: opts.clientVersion ?? '9.9.9', platform: 'linux', arch: 'x64' },
        device: { id: id.device_id },
        workspace_id: id.workspace_id,
        user_id: id.user_id,
        functions_revision: 0,
        limits: { max_message_bytes: 1048576, max_concurrent_calls: 8, dedupe_retention_s: 86400 },
      },
      10_000,
    );
    await hello.catch((e: unknown) => {
      ws.terminate();
      throw e;
    });
    return rogue;
  }

  /** Sends `aios/call.report` with these outcomes; resolves with the bridge's answer. */
  report(outcomes: Outcome[]): Promise<{ accepted: string[] }> {
    return this.peer.request(METHODS.callReport, { outcomes }, 10_000);
  }

  close(): void {
    this.ws.close();
  }
}

/** A fresh public P-256 JWK. */
export function publicJwk(): JWK {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return publicKey.export({ format: 'jwk' }) as JWK;
}

/** POST /v1/oauth/device_authorization as a device would; returns status and JSON body. */
export async function askForCode(bridgeUrl: string, deviceId: string, jwk: JWK = publicJwk()): Promise<{ status: number; body: Record<string, string> }> {
  const res = await fetch(`${bridgeUrl}/v1/oauth/device_authorization`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: DEVICE_CLIENT_ID, device_id: deviceId, device_name: 'Rogue', platform: 'linux x64', client_version: '9.9.9', public_jwk: jwk }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

/** POST /v1/oauth/token with a device code. */
export async function pollToken(bridgeUrl: string, deviceCode: string): Promise<{ status: number; body: Record<string, string> }> {
  const res = await fetch(`${bridgeUrl}/v1/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: DEVICE_CODE_GRANT, client_id: DEVICE_CLIENT_ID, device_code: deviceCode }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}
