/**
 * The part of a bridge's config every node of a cluster must share (issue 34): who may call (`runtime_tokens`),
 * which devices may connect (`device_tokens`), who may sign in (`users`), the oldest client accepted
 * (`min_client_version`) and, when set, the URL runtimes and devices are given (`public_url`). A node that
 * differed would accept a token the others refuse, or send users elsewhere. Each is digested as the SHA-256 of
 * its JCS (RFC 8785) text, so key order and whitespace in the files do not matter; the tokens themselves are
 * never stored, only digests of the whole sections.
 */
import { createHash } from 'node:crypto';
import type { BridgeConfig } from '../../config/bridge-config.js';
import { jcs } from '../../protocol/hash.js';
import type { NodeConfigDigest } from '../store/async-store.js';

/** The config keys every node must share. */
export const SHARED_CONFIG_KEYS = ['runtime_tokens', 'device_tokens', 'users', 'min_client_version', 'public_url'] as const;

/** One of {@link SHARED_CONFIG_KEYS}. */
export type SharedConfigKey = (typeof SHARED_CONFIG_KEYS)[number];

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The digests of `config`'s shared keys (after defaults), and of them all together. */
export function configDigest(config: Pick<BridgeConfig, 'runtime_tokens' | 'device_tokens' | 'users' | 'min_client_version' | 'public_url'>): NodeConfigDigest {
  const values: Record<SharedConfigKey, unknown> = {
    runtime_tokens: config.runtime_tokens,
    device_tokens: config.device_tokens,
    users: config.users ?? [],
    min_client_version: config.min_client_version,
    // Only when set: a node that leaves it out differs from one that sets it.
    public_url: config.public_url ?? null,
  };
  const keys = Object.fromEntries(SHARED_CONFIG_KEYS.map((k) => [k, sha256(jcs(values[k]))]));
  return { digest: sha256(jcs(keys)), keys };
}

/** The shared keys whose digests differ between two nodes' configs. */
export function differingKeys(a: NodeConfigDigest, b: NodeConfigDigest): string[] {
  const all = new Set([...Object.keys(a.keys), ...Object.keys(b.keys)]);
  return [...all].filter((k) => a.keys[k] !== b.keys[k]).sort();
}
