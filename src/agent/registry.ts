/**
 * The function registry: the whitelist of callable functions (PROTOCOL.md §4). Handlers register
 * definitions; the registry checks and hashes descriptors, checks their schemas against the
 * meta-schema (they compile on first use: src/protocol/schema-validator.ts), keeps a revision that
 * strictly increases for the life of the data directory, and emits coalesced `tools_changed` events.
 */
import { EventEmitter } from 'node:events';
import { descriptorHash } from '../protocol/hash.js';
import { Descriptor, type ToolsChanged } from '../protocol/messages.js';
import { schemaValidator } from '../protocol/schema-validator.js';
import type { FunctionDefinition } from '../sdk/index.js';

/** A registered function: its full descriptor (with hash) and its definition. */
export interface RegisteredFunction {
  descriptor: Descriptor;
  def: FunctionDefinition<Record<string, unknown>, unknown>;
  /** Which adapter registered it (a handler folder name or a third-party adapter id). */
  source: string;
}

/** Persists the revision counter and the fingerprint it belongs to. */
export interface RevisionStore {
  get(key: string): string | undefined;
  set(key: string, value: string): void;
}

/** Raised when a descriptor is unusable; the function is not registered. */
export class DescriptorError extends Error {
  constructor(readonly functionId: string, message: string) {
    super(`${functionId}: ${message}`);
    this.name = 'DescriptorError';
  }
}

const COALESCE_MS = 300;

/** Emits 'changed' (ToolsChanged) after changes settle for 300 ms. */
export class FunctionRegistry extends EventEmitter {
  private readonly fns = new Map<string, RegisteredFunction>();
  /** The descriptors and their ids in id order, until the set changes (device.info lists the ids on every call). */
  private sorted: { descriptors: Descriptor[]; ids: string[] } | undefined;
  private rev: number;
  private pending = { added: new Map<string, string>(), removed: new Map<string, string>(), updated: new Map<string, string>() };
  private timer: NodeJS.Timeout | undefined;
  /**
   * Functions registered but not published (turned off in Settings or by the config): part of the
   * revision's fingerprint, so turning one off or on is a new revision, also across a restart.
   */
  hidden: (id: string) => boolean = () => false;

  constructor(private readonly store?: RevisionStore) {
    super();
    this.rev = Number(store?.get('functions_revision') ?? '0');
  }

  /** Current revision. */
  get revision(): number {
    return this.rev;
  }

  /** Why these functions could not be registered (a bad descriptor), or undefined when they can. */
  check(defs: readonly FunctionDefinition<never, unknown>[]): string | undefined {
    try {
      for (const d of defs) this.prepare('(check)', d as unknown as FunctionDefinition<Record<string, unknown>, unknown>);
      return undefined;
    } catch (e) {
      return (e as Error).message;
    }
  }

  /** Registers or replaces functions from one source. Throws DescriptorError for a bad descriptor. */
  register(source: string, defs: readonly FunctionDefinition<never, unknown>[]): void {
    const prepared = defs.map((d) => this.prepare(source, d as unknown as FunctionDefinition<Record<string, unknown>, unknown>));
    for (const f of prepared) {
      const prev = this.fns.get(f.descriptor.id);
      if (prev && prev.source !== source) throw new DescriptorError(f.descriptor.id, `already registered by ${prev.source}`);
    }
    for (const f of prepared) {
      const prev = this.fns.get(f.descriptor.id);
      this.fns.set(f.descriptor.id, f);
      this.sorted = undefined;
      if (!prev) this.note('added', f.descriptor);
      else if (prev.descriptor.descriptor_hash !== f.descriptor.descriptor_hash) this.note('updated', f.descriptor);
    }
  }

  /**
   * Makes a source's functions exactly `defs`: new ones are added, changed ones updated (only when their
   * descriptor hash differs), and the source's functions not in `defs` removed. Unchanged functions are
   * not announced. Throws DescriptorError, changing nothing, when a descriptor is bad.
   */
  replaceSource(source: string, defs: readonly FunctionDefinition<never, unknown>[]): void {
    this.register(source, defs);
    const keep = new Set(defs.map((d) => (d as unknown as { descriptor: { id: string } }).descriptor.id));
    for (const [id, f] of this.fns) {
      if (f.source !== source || keep.has(id)) continue;
      this.fns.delete(id);
      this.sorted = undefined;
      this.note('removed', f.descriptor);
    }
  }

  /** Removes every function of a source (e.g. an adapter folder that was deleted). */
  unregisterSource(source: string): void {
    for (const [id, f] of this.fns) {
      if (f.source !== source) continue;
      this.fns.delete(id);
      this.sorted = undefined;
      this.note('removed', f.descriptor);
    }
  }

  /**
   * Announces that a registered function was turned off (`published: false`: removed) or on again
   * (added), coalesced with other changes into one tools_changed with a new revision.
   */
  setPublished(id: string, published: boolean): void {
    const f = this.fns.get(id);
    if (f) this.note(published ? 'added' : 'removed', f.descriptor);
  }

  /**
   * Forgets changes not yet announced: the initial set is announced by hello (with its revision),
   * not by tools_changed.
   */
  discardPending(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = { added: new Map(), removed: new Map(), updated: new Map() };
  }

  get(id: string): RegisteredFunction | undefined {
    return this.fns.get(id);
  }

  /** Descriptors in deterministic order (by id). */
  descriptors(): Descriptor[] {
    return this.inOrder().descriptors.slice();
  }

  ids(): string[] {
    return this.inOrder().ids.slice();
  }

  private inOrder(): { descriptors: Descriptor[]; ids: string[] } {
    if (!this.sorted) {
      const descriptors = [...this.fns.values()].map((f) => f.descriptor).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      this.sorted = { descriptors, ids: descriptors.map((d) => d.id) };
    }
    return this.sorted;
  }

  /**
   * Makes the revision reflect the current set: bumps it when the set differs from the one the
   * stored revision described (so a restart with new handlers announces a new revision).
   */
  settle(): number {
    const fp = this.fingerprint();
    if (this.store?.get('functions_fingerprint') !== fp) {
      this.rev++;
      this.store?.set('functions_revision', String(this.rev));
      this.store?.set('functions_fingerprint', fp);
    }
    return this.rev;
  }

  private fingerprint(): string {
    return this.descriptors().map((d) => (this.hidden(d.id) ? '-' : '') + d.descriptor_hash).join(',');
  }

  private prepare(source: string, def: FunctionDefinition<Record<string, unknown>, unknown>): RegisteredFunction {
    const input = { ...def.descriptor } as Record<string, unknown>;
    delete input['descriptor_hash'];
    const problems = schemaValidator.validate(Descriptor, input);
    const id = typeof input['id'] === 'string' ? input['id'] : '(no id)';
    if (problems.length) throw new DescriptorError(id, `invalid descriptor: ${problems.map((p) => `${p.pointer} ${p.message}`).join('; ')}`);
    const d = input as Descriptor;
    if (d.timeout_ms_default > d.timeout_ms_max) throw new DescriptorError(id, 'timeout_ms_default exceeds timeout_ms_max');
    for (const key of ['input_schema', 'output_schema'] as const) {
      if (JSON.stringify(d[key]).includes('"$ref":"http')) throw new DescriptorError(id, `${key} has a remote $ref`);
      try {
        schemaValidator.checkSchema(d[key]);
      } catch (e) {
        throw new DescriptorError(id, `${key} is not a valid JSON Schema: ${(e as Error).message}`);
      }
    }
    const descriptor: Descriptor = { ...d, descriptor_hash: descriptorHash(d as unknown as Record<string, unknown>) };
    return { descriptor, def, source };
  }

  private note(kind: 'added' | 'removed' | 'updated', d: Descriptor): void {
    const p = this.pending;
    if (kind === 'added' && p.removed.has(d.id)) {
      p.removed.delete(d.id);
      p.updated.set(d.id, d.name);
    } else if (kind === 'removed' && p.added.has(d.id)) {
      p.added.delete(d.id);
    } else if (kind === 'updated' && p.added.has(d.id)) {
      // still "added" from the subscriber's point of view
    } else {
      if (kind === 'removed') p.updated.delete(d.id);
      p[kind].set(d.id, d.name);
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.emitChanged(), COALESCE_MS);
    this.timer.unref();
  }

  private emitChanged(): void {
    this.timer = undefined;
    const p = this.pending;
    this.pending = { added: new Map(), removed: new Map(), updated: new Map() };
    const list = (m: Map<string, string>) => [...m].map(([id, name]) => ({ id, name })).sort((a, b) => (a.id < b.id ? -1 : 1));
    const change: ToolsChanged = { revision: 0, added: list(p.added), removed: list(p.removed), updated: list(p.updated) };
    if (!change.added.length && !change.removed.length && !change.updated.length) return;
    const before = this.rev;
    change.revision = this.settle();
    // Changes that cancel out (a function turned off and on again within the window) change nothing:
    // no announcement, and no revision that says nothing new.
    if (change.revision === before) return;
    this.emit('changed', change);
  }
}
