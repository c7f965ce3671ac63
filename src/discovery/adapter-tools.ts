/**
 * What adapter authors run (`aios-device adapter validate|sign|verify`): read an adapter folder's manifest,
 * bind its code, sign the card, and check a folder or URL the way the agent will.
 */
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { importJWK, type JWK } from 'jose';
import { schemaValidator } from '../protocol/schema-validator.js';
import { CARD_ALGORITHMS, publicOnly, signCard, type CardAlgorithm, type CardSigningKey } from '../protocol/card-sign.js';
import { checkCodeBinding, computeCodeBinding } from './code-binding.js';
import { CARD_FILE, TOOL_YAML_FILE, mcpEntry, readCandidate } from './adapter-scanner.js';
import { CODE_BINDING_EXTENSION, type AdapterCard } from '../protocol/manifest-schemas.js';
import type { TrustStore } from './trust-store.js';
import { writeJsonFile } from '../base/json-file.js';
import { verifySignedAdapter } from './local-adapter.js';
import { AdapterProblem } from './adapter-problem.js';

/** The folder's card (from `adapter.json`, else mapped from `tool.aios.yaml`) and the code entry. */
export async function readAdapterManifest(dir: string): Promise<{ card: AdapterCard; entry: string | undefined; from: 'card' | 'yaml' }> {
  const c = await readCandidate(dir, basename(dir), 0);
  if (!c) throw new AdapterProblem('core.adapter.no_manifest', { card: CARD_FILE, yaml: TOOL_YAML_FILE, dir });
  if (c.problem) throw new AdapterProblem('core.adapter.detail', { detail: c.problem });
  if (!c.card) throw new AdapterProblem('core.adapter.unreadable');
  const entry = c.kind === 'card' ? (c.card.code?.entry ?? (c.card.mcp ? mcpEntry(c.card.mcp) : undefined)) : c.entry;
  return { card: c.card, entry, from: c.kind };
}

/**
 * Problems a folder has before signing (schemas of skills, ids, entry); [] when it is fine. Each is an
 * {@link AdapterProblem}: `message` in English, `said` to render in the reader's language.
 */
export async function validateAdapterDir(dir: string): Promise<AdapterProblem[]> {
  let m;
  try {
    m = await readAdapterManifest(dir);
  } catch (e) {
    return [e instanceof AdapterProblem ? e : new AdapterProblem('core.adapter.detail', { detail: (e as Error).message })];
  }
  const problems: AdapterProblem[] = [];
  const seen = new Set<string>();
  for (const s of m.card.skills) {
    if (seen.has(s.id)) problems.push(new AdapterProblem('core.adapter.skill_repeated', { skill: s.id }));
    seen.add(s.id);
    for (const k of ['input_schema', 'output_schema'] as const) {
      const schema = s[k];
      if (!schema) continue;
      if (JSON.stringify(schema).includes('"$ref":"http')) problems.push(new AdapterProblem('core.adapter.remote_ref', { skill: s.id, schema: k }));
      try {
        schemaValidator.compile(schema);
      } catch (e) {
        // ajv's compile error (a schema of a schema) stays in its own words: it names the keyword at fault.
        problems.push(new AdapterProblem('core.adapter.bad_schema', { skill: s.id, schema: k, detail: (e as Error).message }));
      }
    }
  }
  if (!m.entry) problems.push(new AdapterProblem('core.adapter.no_entry'));
  else {
    try {
      await computeCodeBinding(dir, m.entry);
    } catch (e) {
      problems.push(e instanceof AdapterProblem ? e : new AdapterProblem('core.adapter.folder_unreadable', { detail: (e as Error).message }));
    }
  }
  if (m.card.signature && m.card.code) {
    const mismatch = await checkCodeBinding(dir, m.card.code);
    if (mismatch) problems.push(new AdapterProblem('core.adapter.binding_mismatch', { detail: mismatch.said }));
  }
  return problems;
}

/** Reads a private JWK file (with `kid`; `alg` defaults to ES256) as a signing key. */
export async function loadSigningKeyFile(path: string, kidOverride?: string): Promise<CardSigningKey> {
  const jwk = JSON.parse(await readFile(path, 'utf8')) as JWK;
  const kid = kidOverride ?? jwk.kid;
  if (!kid) throw new AdapterProblem('core.adapter.key_no_kid');
  const alg = (jwk.alg ?? (jwk.kty === 'OKP' ? 'EdDSA' : jwk.kty === 'RSA' ? 'RS256' : 'ES256')) as CardAlgorithm;
  if (!CARD_ALGORITHMS.includes(alg)) throw new AdapterProblem('core.adapter.key_bad_alg', { alg, algs: CARD_ALGORITHMS.join(', ') });
  if (!jwk.d) throw new AdapterProblem('core.adapter.key_not_private');
  const privateKey = await importJWK(jwk, alg);
  if (privateKey instanceof Uint8Array) throw new AdapterProblem('core.adapter.key_symmetric');
  return { kid, alg, privateKey, publicJwk: { ...publicOnly(jwk), kid, alg } };
}

/** Binds the folder's code into its card, signs it, and writes `adapter.json`. Returns the signed card. */
export async function signAdapterDir(dir: string, key: CardSigningKey): Promise<AdapterCard> {
  const { card, entry } = await readAdapterManifest(dir);
  if (!entry) throw new AdapterProblem('core.adapter.no_entry');
  const { signature: _old, ...unsigned } = card;
  const code = await computeCodeBinding(dir, entry);
  const extensions = [...new Set([...(unsigned.extensions ?? []), CODE_BINDING_EXTENSION])];
  const signed = await signCard({ ...unsigned, extensions, code }, key);
  const file = join(dir, CARD_FILE);
  await writeJsonFile(file, signed);
  return signed;
}

/** Checks a folder as the agent will: signature against the trust store, then the code binding. */
export async function verifyAdapterDir(dir: string, trust: TrustStore): Promise<{ card: AdapterCard; kid: string }> {
  const text = await readFile(join(dir, CARD_FILE), 'utf8').catch(() => undefined);
  if (text === undefined) throw new AdapterProblem('core.adapter.not_signed_folder', { file: CARD_FILE });
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new AdapterProblem('core.adapter.not_json', { file: CARD_FILE });
  }
  const { card, kid } = await verifySignedAdapter(dir, raw, trust);
  return { card, kid };
}
