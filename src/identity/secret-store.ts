/**
 * Where the agent keeps its secrets (tokens, the device's private key): the OS keychain through
 * `@napi-rs/keyring` (macOS Keychain, Windows Credential Manager, the Secret Service on Linux), or,
 * only when the config names one, a JSON file readable by its owner alone.
 */
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeJsonFile } from '../base/json-file.js';
import { coreMessage, type Message } from '../i18n/index.js';
import { SaidError } from '../i18n/said.js';

/** A small key/value store for secrets, addressed by account name. */
export interface SecretStore {
  /** Says where secrets go, for messages (never includes a secret). */
  readonly description: string;
  /** The secret stored under `account`, or null. */
  get(account: string): Promise<string | null>;
  /** Stores (replaces) a secret. */
  set(account: string, secret: string): Promise<void>;
  /** Deletes a secret; false when there was none. */
  delete(account: string): Promise<boolean>;
}

/** The keychain cannot be reached (no Secret Service, locked keychain, missing native module). Stable code: `secret_store_unavailable`. */
export class SecretStoreUnavailableError extends SaidError {
  readonly code = 'secret_store_unavailable';
  constructor(said: Message, options?: { cause?: unknown }) {
    super(said, options);
    this.name = 'SecretStoreUnavailableError';
  }
}

/** The service name under which all of the agent's keychain entries are filed. */
export const KEYCHAIN_SERVICE = 'aios-device';

const NO_KEYCHAIN = coreMessage(process.platform === 'linux' ? 'core.keychain.unavailable_linux' : 'core.keychain.unavailable');

type KeyringModule = typeof import('@napi-rs/keyring');
let keyringModule: Promise<KeyringModule> | undefined;

// Loaded on first use: a machine without the native binary still runs everything that needs no secret.
function loadKeyring(): Promise<KeyringModule> {
  keyringModule ??= import('@napi-rs/keyring');
  return keyringModule;
}

/** Secrets in the OS keychain. */
export class KeychainSecretStore implements SecretStore {
  readonly description = 'the OS keychain';

  constructor(private readonly service: string = KEYCHAIN_SERVICE) {}

  /** Fails with {@link SecretStoreUnavailableError} unless the keychain answers a read. */
  async probe(): Promise<void> {
    await this.get('probe');
  }

  async get(account: string): Promise<string | null> {
    return this.call(account, (e) => e.getPassword());
  }

  async set(account: string, secret: string): Promise<void> {
    await this.call(account, (e) => e.setPassword(secret));
  }

  async delete(account: string): Promise<boolean> {
    return this.call(account, (e) => e.deletePassword());
  }

  private async call<T>(account: string, op: (e: InstanceType<KeyringModule['AsyncEntry']>) => Promise<T>): Promise<T> {
    let mod: KeyringModule;
    try {
      mod = await loadKeyring();
    } catch (cause) {
      throw new SecretStoreUnavailableError(NO_KEYCHAIN, { cause });
    }
    try {
      // Pinned to the Secret Service on Linux: the library would otherwise fall back to the kernel
      // keyring, which forgets everything at reboot and would look like a silent logout.
      const entry = new mod.AsyncEntry(this.service, account, { linux: { store: 'secret-service' } });
      return await op(entry);
    } catch (cause) {
      throw new SecretStoreUnavailableError(NO_KEYCHAIN, { cause });
    }
  }
}

interface SecretFile {
  version: 1;
  secrets: Record<string, string>;
}

/** Secrets in one JSON file with mode 0600, for machines without a keychain; used only when the config names the file. */
export class FileSecretStore implements SecretStore {
  readonly description: string;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly path: string) {
    this.description = `the token file ${path}`;
  }

  async get(account: string): Promise<string | null> {
    return (await this.read()).secrets[account] ?? null;
  }

  async set(account: string, secret: string): Promise<void> {
    await this.update((f) => {
      f.secrets[account] = secret;
    });
  }

  async delete(account: string): Promise<boolean> {
    let had = false;
    await this.update((f) => {
      had = account in f.secrets;
      delete f.secrets[account];
    });
    return had;
  }

  // Serialised, so two concurrent writes in this process cannot lose one another's entry.
  private update(change: (f: SecretFile) => void): Promise<void> {
    const next = this.queue.then(async () => {
      const f = await this.read();
      change(f);
      await this.write(f);
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async read(): Promise<SecretFile> {
    let text: string;
    try {
      if (process.platform !== 'win32') {
        const st = await stat(this.path);
        if ((st.mode & 0o077) !== 0) {
          throw new SaidError(coreMessage('core.keychain.file_open', { file: this.path, mode: (st.mode & 0o777).toString(8) }));
        }
      }
      text = await readFile(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, secrets: {} };
      throw e;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    const secrets = (parsed as Partial<SecretFile> | null)?.secrets;
    if (!secrets || typeof secrets !== 'object') throw new SaidError(coreMessage('core.keychain.not_a_secret_file', { file: this.path }));
    return { version: 1, secrets: { ...secrets } };
  }

  private async write(f: SecretFile): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    await writeJsonFile(this.path, f, 0o600);
  }
}

/** True when `path` is a secret file written by {@link FileSecretStore} (as opposed to a provisioned bare token). */
export async function isSecretFile(path: string): Promise<boolean> {
  try {
    const v = JSON.parse(await readFile(path, 'utf8')) as { secrets?: unknown };
    return typeof v.secrets === 'object' && v.secrets !== null;
  } catch {
    return false;
  }
}

/** The store the config asks for: the token file when `tokenFile` is given, else the keychain (probed, so its absence is reported now and clearly). */
export async function openSecretStore(opts: { tokenFile?: string | undefined } = {}): Promise<SecretStore> {
  if (opts.tokenFile) return new FileSecretStore(opts.tokenFile);
  const store = new KeychainSecretStore();
  await store.probe();
  return store;
}
