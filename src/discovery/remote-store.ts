/**
 * The remote adapters the registry knows (PROTOCOL.md §7.3): the list a person added, stored in
 * `remote-adapters.json`, and its entries fetched afresh from each origin. Two queues keep it sound: edits
 * of the stored list run one at a time (two concurrent adds must both be kept), and so do refreshes (a later
 * one is applied after an earlier one), outside the registry's scan queue: an unreachable origin must not
 * hold up a local rescan.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { PROTOCOL_VERSION } from '../protocol/messages.js';
import type { AdapterCard } from '../protocol/manifest-schemas.js';
import { writeJsonFile } from '../base/json-file.js';
import { hash, type AdapterEntry } from './adapter-entry.js';
import { unavailableBecause, type AdapterStatus } from './local-adapter.js';
import { AdapterProblem, problemOf } from './adapter-problem.js';
import { fetchRemoteCard, remoteFunctions, unreachableFunctions, type RemoteCard } from './remote-adapter.js';
import type { TrustStore } from './trust-store.js';

/** One remote adapter as `remote-adapters.json` keeps it. */
interface RemoteRecord {
  url: string;
  id: string;
  name: string;
  added_at: string;
  /** An extra CA (PEM) trusted for this adapter's origin (`adapters add --ca`), kept so every later fetch and call uses it. */
  ca?: string;
  /** The verified card as it was when added (unsigned): its skills stay listed, answering unavailable, while the origin is down. */
  card?: Omit<AdapterCard, 'signature'>;
}

/** Where the list is kept and how its origins are reached. */
export interface RemoteStoreOptions {
  /** `remote-adapters.json`. */
  file: string;
  trust: TrustStore;
  /** Extra CA (PEM) trusted for every remote adapter. */
  ca?: string | Buffer | undefined;
  /** Abandons fetches in flight (the registry stopping). */
  signal: AbortSignal;
}

/** The stored remote list and its entries. */
export class RemoteAdapterStore {
  /** Edits of the stored list, one at a time. */
  private edits: Promise<unknown> = Promise.resolve();
  /** Refreshes, one at a time among themselves. */
  private refreshes: Promise<unknown> = Promise.resolve();
  /** The last card each remote adapter served (for when its origin is down). */
  private readonly lastCards = new Map<string, Omit<AdapterCard, 'signature'>>();

  constructor(private readonly opts: RemoteStoreOptions) {}

  /** Fetches and verifies a card (not yet stored). Throws RemoteAdapterError. */
  fetch(url: string, ca?: string): Promise<RemoteCard> {
    return fetchRemoteCard(url, { trust: this.opts.trust, ca: ca ?? this.opts.ca, signal: this.opts.signal });
  }

  /** Stores a fetched card under its id (replacing a record of the same id), with the CA given for it. */
  add(remote: RemoteCard, ca?: string): Promise<void> {
    const id = remote.card.adapter.id;
    const { signature: _sig, ...card } = remote.card;
    return this.edit((records) => [...records.filter((r) => r.id !== id), { url: remote.url, id, name: remote.card.adapter.name, added_at: new Date().toISOString(), card, ...(ca ? { ca } : {}) }]);
  }

  /** Forgets the record of `id`; false when there was none. */
  async remove(id: string): Promise<boolean> {
    let removed = false;
    await this.edit((records) => {
      const kept = records.filter((r) => r.id !== id);
      removed = kept.length < records.length;
      return removed ? kept : undefined;
    });
    return removed;
  }

  /**
   * Runs `apply` with every stored adapter's entry, fetched afresh; one refresh at a time, so a later one is
   * applied after an earlier one.
   */
  refresh<T>(apply: (entries: AdapterEntry[]) => Promise<T>): Promise<T> {
    const run = this.refreshes.then(async () => {
      // Keys imported by another process (`keys import`) since the last refresh may verify a card now.
      await this.opts.trust.reloadImported();
      return apply(await this.entries());
    });
    this.refreshes = run.catch(() => undefined);
    return run;
  }

  /** Settles once the refresh in progress (if any) has. */
  async idle(): Promise<void> {
    await this.refreshes.catch(() => undefined);
  }

  private async entries(): Promise<AdapterEntry[]> {
    // All at once: one unreachable origin costs its timeout once, not once per adapter before it.
    return Promise.all((await this.read()).map((r) => this.entry(r)));
  }

  private async entry(r: RemoteRecord): Promise<AdapterEntry> {
    const base = { id: r.id, kind: 'remote' as const, source: { kind: 'remote' as const, url: r.url } };
    try {
      const ca = r.ca ?? this.opts.ca;
      const remote = await fetchRemoteCard(r.url, { trust: this.opts.trust, ca, signal: this.opts.signal });
      if (remote.card.adapter.id !== r.id) throw new AdapterProblem('core.adapter.remote_renamed', { id: remote.card.adapter.id });
      const { signature: _s, ...card } = remote.card;
      const functions = remoteFunctions(remote, { ca });
      const status: AdapterStatus = { available: true, software_installed: true, software_running: true };
      this.lastCards.set(r.id, card);
      return { ...base, card, status, functions, fingerprint: hash({ card, status }) };
    } catch (e) {
      // Down (or no longer verifying): its known skills stay, answering device_unavailable with the reason.
      const known = this.lastCards.get(r.id) ?? r.card;
      if (Array.isArray(known?.skills) && known.skills.length && known.adapter?.id === r.id) {
        const reason = (e as Error).message;
        const status: AdapterStatus = { available: false, software_installed: true, software_running: false, ...unavailableBecause(problemOf(e)) };
        try {
          return { ...base, card: known, status, functions: unreachableFunctions(known, reason), fingerprint: hash({ card: known, status }) };
        } catch {
          // A stored card damaged by hand: listed without its skills, as if it had never been fetched.
        }
      }
      const card = { adapter: { id: r.id, name: r.name, version: '0.0.0', protocol_version: PROTOCOL_VERSION }, capabilities: {}, skills: [] };
      const status: AdapterStatus = { available: false, software_installed: true, software_running: false, ...unavailableBecause(problemOf(e)) };
      return { ...base, card, status, functions: [], fingerprint: hash({ card, status }) };
    }
  }

  /** Reads, changes and writes the stored list, one edit at a time; `edit` returns undefined to leave it. */
  private edit(edit: (records: RemoteRecord[]) => RemoteRecord[] | undefined): Promise<void> {
    const run = this.edits.then(async () => {
      const next = edit(await this.read());
      if (next) await this.write(next);
    });
    this.edits = run.catch(() => undefined);
    return run;
  }

  /** The stored list; none when the file does not exist. A file that cannot be read or parsed is an error, never an empty list (the next edit would overwrite it). */
  private async read(): Promise<RemoteRecord[]> {
    const file = this.opts.file;
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new AdapterProblem('core.adapter.remote_list_unreadable', { file, detail: (e as Error).message }, undefined, { cause: e });
    }
    try {
      const v = JSON.parse(text) as { adapters?: unknown };
      if (Array.isArray(v.adapters)) return v.adapters as RemoteRecord[];
    } catch {
      // reported below
    }
    throw new AdapterProblem('core.adapter.remote_list_invalid', { file });
  }

  private async write(records: RemoteRecord[]): Promise<void> {
    const file = this.opts.file;
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    await writeJsonFile(file, { adapters: records }, 0o600);
  }
}
