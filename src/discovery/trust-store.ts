/**
 * The trust store for adapter signatures (PROTOCOL.md §7.1, §7.3): built-in keys (`resources/trust/*.jwks`),
 * the keys files named in config (`trust.keys`), and keys the user imported (`<data_dir>/trust/imported.jwks`).
 * Earlier sources win a key-id clash, so an imported key can never replace a built-in one.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { PROJECT_ROOT } from '../version.js';
import type { JWK } from 'jose';
import { jcs } from '../protocol/hash.js';
import type { Logger } from '../base/logger.js';
import { publicOnly } from '../protocol/card-sign.js';
import { writeJsonFile } from '../base/json-file.js';
import { AdapterProblem } from './adapter-problem.js';

/** Where a trusted key came from. */
export type TrustSource = 'builtin' | 'config' | 'imported' | 'pinned';

/** Constructor options. */
export interface TrustStoreOptions {
  /** Folder of built-in `*.jwks` files; default: the package's `resources/trust`; null = none. */
  builtinDir?: string | null;
  /** JWKS files from config (`trust.keys`). */
  files?: string[];
  /** Where `keys import` writes; typically `<data_dir>/trust/imported.jwks`. */
  importedFile?: string;
  /** Keys pinned at enrolment. */
  pinned?: JWK[];
  log?: Logger;
}

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'];

/**
 * The built-in `resources/trust` folder: the package's (from `src/` under tsx and from `dist/`), or, in
 * the packaged tray app, the one beside `app.asar` (electron-builder's `extraResources`).
 */
export function builtinTrustDir(resourcesPath = (process as { resourcesPath?: string }).resourcesPath, projectRoot = PROJECT_ROOT): string | undefined {
  const candidates = [join(projectRoot, 'resources', 'trust'), ...(resourcesPath ? [join(resourcesPath, 'resources', 'trust')] : [])];
  return candidates.find((d) => existsSync(d));
}

/** The default imported-keys file under a data directory. */
export function importedKeysFile(dataDir: string): string {
  return join(dataDir, 'trust', 'imported.jwks');
}

/** Parses a JWKS document into public keys that carry a `kid`; throws with a plain reason otherwise. */
export function parseJwks(value: unknown): JWK[] {
  // A bare JWK is read as a set of one, so handing over a single key file works (and a private one is named as such).
  const keys = typeof (value as JWK | null)?.kty === 'string' ? [value] : (value as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new AdapterProblem('core.adapter.jwks_not_jwks');
  return keys.map((k, i) => {
    if (!k || typeof k !== 'object' || typeof (k as JWK).kty !== 'string') throw new AdapterProblem('core.adapter.jwks_not_jwk', { index: i });
    if (typeof (k as JWK).kid !== 'string' || !(k as JWK).kid) throw new AdapterProblem('core.adapter.jwks_no_kid', { index: i });
    if (PRIVATE_MEMBERS.some((m) => m in (k as object))) throw new AdapterProblem('core.adapter.jwks_private', { index: i, kid: String((k as JWK).kid) });
    return k as JWK;
  });
}

/** Resolves key ids to trusted public keys. */
export class TrustStore {
  private readonly keys = new Map<string, { jwk: JWK; source: TrustSource }>();

  private constructor(private readonly importedFile: string | undefined, private readonly log: Logger | undefined) {}

  /** Loads every source; an unreadable file is logged and skipped, never fatal. */
  static async load(opts: TrustStoreOptions = {}): Promise<TrustStore> {
    const store = new TrustStore(opts.importedFile, opts.log);
    const builtin = opts.builtinDir === undefined ? builtinTrustDir() : opts.builtinDir;
    if (builtin) {
      const names = (await readdir(builtin).catch(() => [] as string[])).filter((n) => n.endsWith('.jwks') || n.endsWith('.jwks.json')).sort();
      for (const n of names) await store.addFile(join(builtin, n), 'builtin');
    }
    for (const f of opts.files ?? []) await store.addFile(f, 'config');
    if (opts.importedFile && existsSync(opts.importedFile)) await store.addFile(opts.importedFile, 'imported');
    for (const k of opts.pinned ?? []) store.add(k, 'pinned');
    return store;
  }

  /** An in-memory store holding exactly these keys (tests, `adapter verify --trust`). */
  static of(keys: JWK[], source: TrustSource = 'config'): TrustStore {
    const s = new TrustStore(undefined, undefined);
    for (const k of keys) s.add(k, source);
    return s;
  }

  /** The trusted public key for `kid`, if any. */
  resolve(kid: string): JWK | undefined {
    return this.keys.get(kid)?.jwk;
  }

  /** Key ids and where they came from. */
  list(): { kid: string; source: TrustSource; kty: string }[] {
    return [...this.keys].map(([kid, v]) => ({ kid, source: v.source, kty: v.jwk.kty ?? '' }));
  }

  /**
   * Adds the keys of a JWKS document to the imported-keys file (and to this store). Refuses private keys
   * and ids already trusted with a different key. Returns the newly added key ids.
   */
  async importJwks(value: unknown): Promise<string[]> {
    if (!this.importedFile) throw new Error('this trust store has no imported-keys file');
    const incoming = parseJwks(value);
    for (const k of incoming) {
      const have = this.keys.get(k.kid as string);
      if (have && jcs(publicOnly(have.jwk)) !== jcs(k)) throw new AdapterProblem('core.adapter.jwks_conflict', { kid: String(k.kid) });
    }
    const added = incoming.filter((k) => !this.keys.has(k.kid as string));
    if (added.length === 0) return [];
    let existing: JWK[] = [];
    try {
      existing = parseJwks(JSON.parse(await readFile(this.importedFile, 'utf8')));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    await mkdir(dirname(this.importedFile), { recursive: true, mode: 0o700 });
    await writeJsonFile(this.importedFile, { keys: [...existing, ...added] }, 0o600);
    for (const k of added) this.add(k, 'imported');
    return added.map((k) => k.kid as string);
  }

  /**
   * Reads the imported-keys file again (another process, `aios-device keys import`, may have added keys
   * since this store loaded). Returns the key ids that are new here.
   */
  async reloadImported(): Promise<string[]> {
    if (!this.importedFile || !existsSync(this.importedFile)) return [];
    const before = new Set(this.keys.keys());
    await this.addFile(this.importedFile, 'imported');
    return [...this.keys.keys()].filter((k) => !before.has(k));
  }

  private add(jwk: JWK, source: TrustSource): void {
    const kid = jwk.kid;
    if (!kid || this.keys.has(kid)) return;
    this.keys.set(kid, { jwk: publicOnly(jwk), source });
  }

  private async addFile(file: string, source: TrustSource): Promise<void> {
    try {
      for (const k of parseJwks(JSON.parse(await readFile(file, 'utf8')))) this.add(k, source);
    } catch (e) {
      this.log?.warn({ file, reason: (e as Error).message }, 'trusted keys file skipped');
    }
  }
}
