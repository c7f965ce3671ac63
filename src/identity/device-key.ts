/**
 * The device's signing key: an ES256 (P-256) key pair created at first run. The private half lives
 * only in the secret store (the OS keychain); the public half is registered with the bridge at login,
 * published at `/.well-known/jwks.json` and used to verify the device's signed Adapter Card.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type { SecretStore } from './secret-store.js';

/** The device's key pair as the signer and the login need it. */
export interface DeviceKey {
  /** RFC 7638 thumbprint of the public key; the `kid` in JWS headers and the JWKS. */
  kid: string;
  privateKey: KeyObject;
  /** Public JWK with `kid`, `alg` and `use`; safe to publish. */
  publicJwk: JWK;
  alg: 'ES256';
}

/** The secret-store account that holds a device's private JWK. */
export function deviceKeyAccount(deviceId: string): string {
  return `${deviceId}/device-key`;
}

/** Loads the device's key from the store, creating and storing it on first run. */
export async function loadOrCreateDeviceKey(store: SecretStore, deviceId: string): Promise<DeviceKey> {
  const account = deviceKeyAccount(deviceId);
  const stored = await store.get(account);
  if (stored) return fromPrivateJwk(JSON.parse(stored) as JsonWebKey);
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' });
  await store.set(account, JSON.stringify(jwk));
  return fromPrivateJwk(jwk);
}

/** Reads the device's key without creating one; null when none is stored. */
export async function loadDeviceKey(store: SecretStore, deviceId: string): Promise<DeviceKey | null> {
  const stored = await store.get(deviceKeyAccount(deviceId));
  return stored ? fromPrivateJwk(JSON.parse(stored) as JsonWebKey) : null;
}

async function fromPrivateJwk(jwk: JsonWebKey): Promise<DeviceKey> {
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || !jwk.d) throw new Error('The stored device key is not an ES256 private key.');
  const privateKey = createPrivateKey({ key: jwk, format: 'jwk' });
  const pub = createPublicKey(privateKey).export({ format: 'jwk' });
  const base: JWK = { kty: 'EC', crv: 'P-256', x: pub.x!, y: pub.y! };
  const kid = await calculateJwkThumbprint(base, 'sha256');
  return { kid, privateKey, publicJwk: { ...base, kid, alg: 'ES256', use: 'sig' }, alg: 'ES256' };
}
