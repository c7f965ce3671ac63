// Regenerates the golden card vectors in test/fixtures/discovery (run once; the outputs are committed):
//   node --import tsx test/discovery/gen-golden.ts
import { writeFileSync } from 'node:fs';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey } from 'jose';
import { jcs } from '../../src/protocol/hash.js';
import { signCard, unsignedPart } from '../../src/protocol/card-sign.js';
import { buildDeviceCard } from '../../src/discovery/card.js';
import { descriptorHash } from '../../src/protocol/hash.js';

const dir = new URL('../fixtures/discovery/', import.meta.url);
const d = {
  id: 'device.echo',
  name: 'Echo — “test” ✓',
  description: 'Returns its input. Unicode and escapes: é 漢字 \u0007 "q" \\ / 😀',
  version: '1.0.0',
  capability_type: 'device',
  access: 'public' as const,
  permission_level: 'low' as const,
  risk: { read_only: true, destructive: false, idempotent: true, physical: false },
  confirmation: 'never' as const,
  examples: ['Echo hello'],
  input_schema: { type: 'object', properties: { text: { type: 'string', maxLength: 1000 } }, required: ['text'], additionalProperties: false },
  output_schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
  timeout_ms_default: 1000,
  timeout_ms_max: 10000,
  cancellable: true,
  locks: [],
};
const card = buildDeviceCard({ deviceId: 'dev_GOLDEN', deviceName: 'Golden test device', version: '1.0.0', http: 'http://127.0.0.1:9527' }, [{ ...d, descriptor_hash: descriptorHash(d) }]);
for (const [alg, kid] of [['ES256', 'golden-es256'], ['EdDSA', 'golden-ed25519']] as const) {
  const { privateKey } = await generateKeyPair(alg, { extractable: true });
  const priv = { ...(await exportJWK(privateKey)), kid, alg };
  const { d: _d, ...pub } = priv;
  const signed = await signCard(card, { kid, alg, privateKey: (await importJWK(priv, alg)) as CryptoKey, publicJwk: pub });
  writeFileSync(new URL(`${kid}.private.jwk.json`, dir), JSON.stringify(priv, null, 2) + '\n');
  writeFileSync(new URL(`${kid}.jwks`, dir), JSON.stringify({ keys: [pub] }, null, 2) + '\n');
  writeFileSync(new URL(`card.signed.${kid}.json`, dir), JSON.stringify(signed, null, 2) + '\n');
}
writeFileSync(new URL('card.json', dir), JSON.stringify(card, null, 2) + '\n');
writeFileSync(new URL('card.canonical.txt', dir), jcs(unsignedPart(card)));
