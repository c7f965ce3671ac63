/**
 * Remote adapters (PROTOCOL.md §7.3): fetch `https://host/.well-known/aios-adapter.json`, verify it against the
 * trust store or the origin's own `/.well-known/jwks.json` (never a `jku`), check the protocol version, and
 * turn its skills into functions that call the adapter's `endpoints.rpc` with `aios/function.invoke`.
 */
import { randomUUID } from 'node:crypto';
import type { JWK } from 'jose';
import { PROTOCOL_VERSION } from '../protocol/messages.js';
import { WireError } from '../protocol/errors.js';
import type { FunctionDefinition } from '../sdk/index.js';
import { skillToDescriptor } from './card.js';
import { verifyCard } from '../protocol/card-sign.js';
import { httpsJson, HttpsJsonError } from './https-json.js';
import type { AdapterCard } from '../protocol/manifest-schemas.js';
import type { TrustStore } from './trust-store.js';
import { parseJwks } from './trust-store.js';
import { AdapterProblem, problem, renderProblem, type ProblemParams } from './adapter-problem.js';
import type { CoreKey } from '../i18n/index.js';

/** Well-known paths on a remote adapter's origin. */
export const CARD_PATH = '/.well-known/aios-adapter.json';
export const JWKS_PATH = '/.well-known/jwks.json';

/** A fetched and verified remote card. */
export interface RemoteCard {
  card: AdapterCard;
  /** The card URL it came from. */
  url: string;
  origin: string;
  kid: string;
  /** Where the verifying key came from. */
  keySource: 'trust-store' | 'origin-jwks';
  /** Absolute https URL of its JSON-RPC endpoint. */
  rpcUrl: string;
}

/** A remote adapter could not be registered; the message is the reason shown to the user (English; `said` for other languages). */
export class RemoteAdapterError extends AdapterProblem {
  /** `cause` keeps the network detail for the owner's debugging; it never goes on the wire. */
  constructor(key: CoreKey, params?: ProblemParams, options?: { cause?: unknown }) {
    super(key, params, undefined, options);
    this.name = 'RemoteAdapterError';
  }
}

/** Options for fetching and calling. */
export interface RemoteOptions {
  trust: TrustStore;
  /** Extra CA in PEM (self-hosted adapters, tests). */
  ca?: string | Buffer | undefined;
  timeoutMs?: number;
  /** Abandons the fetch (the registry stopping). */
  signal?: AbortSignal | undefined;
}

/** The card URL for what a user typed: an origin gets the well-known path appended. */
export function cardUrlFor(input: string): URL {
  let u: URL;
  try {
    u = new URL(input);
  } catch {
    throw new RemoteAdapterError('core.adapter.remote_not_url');
  }
  if (u.protocol !== 'https:') throw new RemoteAdapterError('core.adapter.remote_not_https');
  if (u.pathname === '/' || u.pathname === '') u.pathname = CARD_PATH;
  u.hash = '';
  return u;
}

/** True when a card's protocol version shares our major version. */
export function protocolCompatible(version: string): boolean {
  return version.split('.')[0] === PROTOCOL_VERSION.split('.')[0];
}

/** The one answer for every failure to fetch a card or its origin's keys. */
export const COULD_NOT_FETCH = renderProblem(problem('core.adapter.remote_unreachable'));

/** Fetches and verifies a remote card; throws `RemoteAdapterError` with the reason. */
export async function fetchRemoteCard(input: string, opts: RemoteOptions): Promise<RemoteCard> {
  const url = cardUrlFor(input);
  const net = { ca: opts.ca, timeoutMs: opts.timeoutMs, signal: opts.signal };
  let raw: unknown;
  try {
    raw = await httpsJson('GET', url, undefined, net);
  } catch (e) {
    // One message whatever went wrong (refused, reset, not TLS, an HTTP status, not JSON): the reason
    // text would let a caller with the local token map which loopback ports are open (issue 13).
    throw new RemoteAdapterError('core.adapter.remote_unreachable', undefined, { cause: e });
  }
  let keySource: RemoteCard['keySource'] = 'trust-store';
  let verified;
  try {
    verified = await verifyCard(raw, async (kid) => {
      const trusted = opts.trust.resolve(kid);
      if (trusted) return trusted;
      keySource = 'origin-jwks';
      let keys: JWK[];
      try {
        keys = parseJwks(await httpsJson('GET', new URL(JWKS_PATH, url.origin), undefined, net));
      } catch {
        throw new RemoteAdapterError('core.adapter.remote_unreachable');
      }
      return keys.find((k) => k.kid === kid);
    });
  } catch (e) {
    if (e instanceof RemoteAdapterError) throw e;
    throw new RemoteAdapterError('core.adapter.remote_not_verified', { detail: (e as Error).message });
  }
  const card = verified.card;
  if (!protocolCompatible(card.adapter.protocol_version)) {
    throw new RemoteAdapterError('core.adapter.remote_protocol', { theirs: card.adapter.protocol_version, ours: PROTOCOL_VERSION });
  }
  const rpc = card.endpoints?.rpc;
  if (!rpc) throw new RemoteAdapterError('core.adapter.remote_no_rpc');
  let rpcUrl: URL;
  try {
    rpcUrl = new URL(rpc, url.origin);
  } catch {
    throw new RemoteAdapterError('core.adapter.remote_rpc_not_url');
  }
  if (rpcUrl.protocol !== 'https:') throw new RemoteAdapterError('core.adapter.remote_rpc_not_https');
  return { card, url: url.href, origin: url.origin, kid: verified.kid, keySource, rpcUrl: rpcUrl.href };
}

function outcomeToResult(result: unknown): unknown {
  const r = result as Record<string, unknown> | null;
  if (!r || typeof r !== 'object' || typeof r['state'] !== 'string' || typeof r['call_id'] !== 'string') return result;
  if (r['state'] === 'completed') return r['output'];
  const err = r['error'] && typeof r['error'] === 'object' ? WireError.fromPlain(r['error'] as Record<string, unknown>) : undefined;
  throw err ?? new WireError('execution_failed', `The remote adapter ended the call as ${String(r['state'])}.`);
}

/**
 * The remote skills as functions. Each call sends `aios/function.invoke` `{ call_id, function, arguments,
 * timeout_ms }` to the card's endpoint; a result that is an outcome (§6.3) is unwrapped, anything else is
 * the output. Validation, consent and the journal stay with the local dispatcher, as for local functions.
 */
export function remoteFunctions(remote: RemoteCard, opts: Pick<RemoteOptions, 'ca'>): FunctionDefinition<never, unknown>[] {
  return remote.card.skills.map((skill) => {
    const descriptor = skillToDescriptor(skill, remote.card.adapter);
    return {
      descriptor,
      async run(args: never, ctx) {
        const body = {
          jsonrpc: '2.0',
          id: randomUUID(),
          method: 'aios/function.invoke',
          params: { call_id: ctx.callId, function: skill.id, arguments: args, timeout_ms: descriptor.timeout_ms_default },
        };
        let res: Record<string, unknown>;
        try {
          res = (await httpsJson('POST', new URL(remote.rpcUrl), body, { ca: opts.ca, signal: ctx.signal, timeoutMs: descriptor.timeout_ms_max + 5000 })) as Record<string, unknown>;
        } catch (e) {
          if (ctx.signal.aborted) throw e;
          const sent = e instanceof HttpsJsonError && e.sent;
          const adapter = remote.card.adapter.id;
          throw new WireError('device_unavailable', `The remote adapter ${adapter} could not be reached: ${(e as Error).message}`, {
            sideEffects: sent ? 'possible' : 'none',
            retryable: !sent,
            details: { adapter, reason: 'adapter_unreachable', url: remote.rpcUrl },
          });
        }
        if (res && typeof res === 'object' && res['error'] && typeof res['error'] === 'object') {
          throw WireError.fromPlain(res['error'] as Record<string, unknown>) ?? new WireError('execution_failed', 'The remote adapter refused the call.');
        }
        return outcomeToResult(res?.['result']);
      },
    } satisfies FunctionDefinition<never, unknown>;
  });
}

/**
 * The skills of a remote adapter that is down, as functions that answer `device_unavailable` naming the
 * adapter and why: a caller learns the adapter is unreachable, not that the function does not exist.
 */
export function unreachableFunctions(card: Pick<AdapterCard, 'adapter' | 'skills'>, reason: string): FunctionDefinition<never, unknown>[] {
  const adapter = card.adapter.id;
  return card.skills.map((skill) => ({
    descriptor: skillToDescriptor(skill, card.adapter),
    run(): Promise<never> {
      return Promise.reject(
        new WireError('device_unavailable', `The remote adapter ${adapter} is unreachable: ${reason}`, { sideEffects: 'none', retryable: true, details: { adapter, reason: 'adapter_unreachable' } }),
      );
    },
  }));
}
