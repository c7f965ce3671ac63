/**
 * Checks a device's Adapter Card against the public key pinned when the device signed in (PROTOCOL §9): what
 * `GET /v1/devices/{id}` shows as `adapter_card_verified`. One function for the single process and every node
 * of a cluster (the pinned key comes from the login store, SQLite or PostgreSQL).
 */
import type { JWK } from 'jose';
import type { Logger } from '../base/logger.js';
import { verifyCard } from '../protocol/card-sign.js';
import type { DeviceIdentity } from './auth.js';
import type { CardCheck } from './http-api.js';

/** The key pinned at the device's sign-in, or null (a device on a configured token has none). */
export type PinnedKey = (identity: DeviceIdentity) => JWK | null | Promise<JWK | null>;

/** `verified: null` without a pinned key; true when the card verifies with it; false, with the problem, when not. */
export async function checkAdapterCard(identity: DeviceIdentity, card: Record<string, unknown>, pinnedKey: PinnedKey | undefined, log: Logger): Promise<CardCheck> {
  const key = (await pinnedKey?.(identity)) ?? null;
  if (!key) return { verified: null };
  try {
    await verifyCard(card, () => key);
    return { verified: true };
  } catch (e) {
    log.warn({ device_id: identity.device_id, err: (e as Error).message }, 'the device\'s adapter card does not verify with its pinned key');
    return { verified: false, problem: (e as Error).message };
  }
}
