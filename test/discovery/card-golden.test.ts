import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { FlattenedSign, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import { jcs } from '../../src/protocol/hash.js';
import { signCard, signingPayload, unsignedPart, verifyCard, type CardAlgorithm } from '../../src/protocol/card-sign.js';
import { validateCard } from '../../src/protocol/manifest-schemas.js';
import { independentJcs, independentVerify } from './independent-verify.js';

const fx = (name: string) => readFileSync(new URL(`../fixtures/discovery/${name}`, import.meta.url), 'utf8');
const json = <T = Record<string, unknown>>(name: string) => JSON.parse(fx(name)) as T;
const card = json('card.json');
const canonical = fx('card.canonical.txt');

async function keyOf(kid: string, alg: CardAlgorithm) {
  const priv = json<JWK>(`${kid}.private.jwk.json`);
  const { d: _d, ...pub } = priv;
  return { kid, alg, privateKey: (await importJWK(priv, alg)) as CryptoKey, publicJwk: pub };
}

test('the golden card matches its schema and canonicalizes to the committed bytes', () => {
  assert.deepEqual(validateCard(card), []);
  assert.equal(jcs(unsignedPart(card)), canonical);
  assert.equal(independentJcs(unsignedPart(card)), canonical, 'the independent serializer agrees with the canonicalize package');
  // The committed bytes are the exact RFC 8785 text: non-ASCII stays literal, control characters are escaped.
  assert.ok(canonical.includes('漢字') && canonical.includes('\\u0007') && canonical.includes('😀'));
});

for (const [kid, alg] of [['golden-es256', 'ES256'], ['golden-ed25519', 'EdDSA']] as const) {
  test(`golden ${alg} signature verifies with the project verifier and with node:crypto alone`, async () => {
    const signed = json(`card.signed.${kid}.json`);
    const jwks = json<{ keys: JWK[] }>(`${kid}.jwks`);
    assert.deepEqual(unsignedPart(signed), card);
    const v = await verifyCard(signed, (k) => jwks.keys.find((x) => x.kid === k));
    assert.equal(v.kid, kid);
    assert.equal(independentVerify(signed, jwks as never), true);
  });

  test(`signing the golden card with the golden ${alg} key gives a signature both verifiers accept`, async () => {
    const signed = await signCard(card, await keyOf(kid, alg));
    const golden = json<{ signature: { value: string } }>(`card.signed.${kid}.json`);
    if (alg === 'EdDSA') assert.equal(signed.signature.value, golden.signature.value, 'Ed25519 is deterministic: same bytes, same signature');
    assert.equal(signed.signature.value.split('.')[0], golden.signature.value.split('.')[0], 'same protected header');
    assert.equal(independentVerify(signed as never, json(`${kid}.jwks`) as never), true);
  });
}

test('one changed byte, another key, or a jku pointing at the signer is refused', async () => {
  const signed = json<{ skills: { description: string }[] }>('card.signed.golden-es256.json');
  const jwks = json<{ keys: JWK[] }>('golden-es256.jwks');
  const resolve = (k: string) => jwks.keys.find((x) => x.kid === k);

  const tampered = structuredClone(signed);
  tampered.skills[0]!.description = tampered.skills[0]!.description.replace('Returns', 'Returnz');
  await assert.rejects(verifyCard(tampered, resolve), /does not verify/);
  assert.equal(independentVerify(tampered, jwks as never), false);

  // An attacker signs with their own key, names our kid and adds a jku to their JWKS: the key still comes from us.
  const { privateKey } = await generateKeyPair('ES256');
  const jws = await new FlattenedSign(signingPayload(card))
    .setProtectedHeader({ alg: 'ES256', kid: 'golden-es256', typ: 'aios-adapter+jws', jku: 'https://attacker.example/jwks.json' })
    .sign(privateKey);
  const forged = { ...card, signature: { algorithm: 'ES256', key_id: 'golden-es256', value: `${jws.protected}..${jws.signature}` } };
  await assert.rejects(verifyCard(forged, resolve), /does not verify/);

  await assert.rejects(verifyCard({ ...signed, signature: undefined }, resolve), /not signed/);
  await assert.rejects(verifyCard(signed, () => undefined), /no trusted key/);
  await assert.rejects(verifyCard({ ...signed, adapter: { name: 'x' } }, resolve), /schema/);
});
