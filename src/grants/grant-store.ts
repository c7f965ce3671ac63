/**
 * The live grants: what the user shared with the agent. Grant kinds are declared by built-in handlers
 * (`defineGrantKind`); the admin config's `grants.<kind>` is validated against the owning kind's entry
 * schema and is the ceiling; the user may narrow it (remove a configured grant) or add grants inside it
 * (`control.grants.add`), persisted in `<data_dir>/user-grants.json`. A kind the config does not name has
 * no ceiling (the user decides it); `grants.<kind>: []` closes it. Every change emits `change`.
 */
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { schemaValidator } from '../protocol/schema-validator.js';
import { writeJsonFileSync } from '../base/json-file.js';
import { coreMessage } from '../i18n/index.js';
import { renderConfigProblem, type ConfigProblem } from '../config/load.js';
import { defaultCovers, type CallResource, type Grant, type GrantKind, type GrantsView, type NormalizeContext } from '../sdk/index.js';
import type { Logger } from '../base/logger.js';

/** A grant that cannot be added or configured; `key` names it (`grants.serial[1]`). */
export class GrantError extends Error {
  /** `ceiling`: the entry is valid but outside what the admin config shares (a user may not widen it). */
  constructor(readonly key: string, message: string, readonly reason?: 'ceiling') {
    super(`${key}: ${message}`);
    this.name = 'GrantError';
  }
}

interface KindEntry {
  kind: GrantKind;
  /** The handler that declared it. */
  owner: string;
}

/** What the user changed, as stored in the data folder. */
interface UserGrants {
  version: 1;
  added: { kind: string; entry: unknown }[];
  removed: { kind: string; id: string }[];
}

const USER_FILE = 'user-grants.json';

/** The user's grant changes as stored in a data folder (for the CLI, which loads no handlers). */
export function readUserGrants(dataDir: string): { added: { kind: string; entry: unknown }[]; removed: { kind: string; id: string }[] } {
  const u = new GrantStore({ dataDir }).userChanges();
  return { added: u.added, removed: u.removed };
}
const noResolve: NormalizeContext = { resolvePath: (p) => p };

/** The grants of one agent: kinds, the admin config, the user's changes, and the live result. */
export class GrantStore implements GrantsView {
  private readonly kinds = new Map<string, KindEntry>();
  private readonly events = new EventEmitter();
  /** Admin grants by kind; a kind present here (even with none) is a ceiling. */
  private admin = new Map<string, Grant[]>();
  /** The raw config section, kept until the kinds are known. */
  private user: UserGrants = { version: 1, added: [], removed: [] };
  private effective = new Map<string, Grant[]>();

  constructor(private readonly opts: { dataDir?: string | undefined; log?: Logger | undefined } = {}) {
    this.events.setMaxListeners(0);
    this.user = this.readUser();
  }

  /** What the user added and removed (as stored). */
  userChanges(): { added: { kind: string; entry: unknown }[]; removed: { kind: string; id: string }[] } {
    return { added: [...this.user.added], removed: [...this.user.removed] };
  }

  /** Registers the grant kinds of a handler; a kind owned by another handler is an error. */
  registerKinds(owner: string, kinds: readonly GrantKind[]): void {
    for (const k of kinds) {
      const prev = this.kinds.get(k.kind);
      if (prev && prev.owner !== owner) throw new Error(`grant kind "${k.kind}" is declared by both ${prev.owner} and ${owner}`);
    }
    for (const k of kinds) this.kinds.set(k.kind, { kind: k, owner });
  }

  /** The declared kinds and who owns them. */
  kindNames(): { kind: string; owner: string }[] {
    return [...this.kinds.values()].map((k) => ({ kind: k.kind.kind, owner: k.owner })).sort((a, b) => (a.kind < b.kind ? -1 : 1));
  }

  /** True when a handler declared this kind. */
  /** The declaration of a kind (its schema, `covers`, `listing`), if a handler declared it. */
  kindOf(kind: string): GrantKind | undefined {
    return this.kinds.get(kind)?.kind;
  }

  hasKind(kind: string): boolean {
    return this.kinds.has(kind);
  }

  /**
   * Validates the config's `grants` section against the declared kinds and makes it the admin grants.
   * Returns one message per problem, naming the key (`grants.serial[1].baud …`); nothing changes then.
   */
  setConfig(section: Readonly<Record<string, unknown>> | undefined, ctx: NormalizeContext = noResolve): string[] {
    return this.configure(section, ctx).map((p) => renderConfigProblem(p));
  }

  /**
   * {@link setConfig} with the problems as data: our own sentences as catalogue messages (to say in the
   * reader's language), a kind's own check as its English text.
   */
  configure(section: Readonly<Record<string, unknown>> | undefined, ctx: NormalizeContext = noResolve): ConfigProblem[] {
    const problems: ConfigProblem[] = [];
    const admin = new Map<string, Grant[]>();
    for (const [kind, entries] of Object.entries(section ?? {})) {
      const k = this.kinds.get(kind);
      if (!k) {
        const known = this.kindNames().map((x) => x.kind).join(', ');
        problems.push(coreMessage('core.grants.unknown_kind', { kind, known: known || coreMessage('core.grants.no_kinds') }));
        continue;
      }
      if (!Array.isArray(entries)) {
        problems.push(coreMessage('core.grants.not_a_list', { kind }));
        continue;
      }
      const list: Grant[] = [];
      entries.forEach((e, i) => {
        try {
          list.push(this.normalize(k.kind, e, `grants.${kind}[${i}]`, ctx, 'config'));
        } catch (err) {
          problems.push((err as Error).message);
        }
      });
      const dup = duplicateAlias(list);
      if (dup) problems.push(coreMessage('core.grants.duplicate_alias', { kind, alias: dup }));
      admin.set(kind, list);
    }
    if (problems.length) return problems;
    this.admin = admin;
    this.recompute(false);
    return [];
  }

  /** Every grant of a kind, as it is now. */
  list(kind: string): Grant[] {
    return [...(this.effective.get(kind) ?? [])];
  }

  /**
   * The admin config's grants by kind, for the kinds it names: the ceiling a user grant must stay
   * inside (a kind named with no entries is closed). Kinds it does not name have no ceiling.
   */
  ceilings(): Record<string, Grant[]> {
    return Object.fromEntries([...this.admin].map(([k, v]) => [k, [...v]]));
  }

  /** All grants, by kind. */
  snapshot(): Record<string, Grant[]> {
    return Object.fromEntries([...this.effective].map(([k, v]) => [k, [...v]]));
  }

  find(kind: string, name: string): Grant | undefined {
    const list = this.effective.get(kind) ?? [];
    const byAlias = list.find((g) => g.alias === name);
    if (byAlias) return byAlias;
    const covers = this.kinds.get(kind)?.kind.covers ?? defaultCovers;
    const exact = list.find((g) => g.id !== '*' && covers(g.id, name));
    if (exact) return exact;
    const any = list.find((g) => g.id === '*');
    return any ? { ...any, id: name } : undefined;
  }

  /**
   * The grant that covers a resource a call named, or why none does. A kind nobody declared is never
   * granted (`undefined`, not an error: such a resource simply asks).
   */
  check(r: CallResource, writes: boolean): { grant: Grant } | { refused: string } | undefined {
    const k = this.kinds.get(r.kind);
    if (!k) return undefined;
    const covers = k.kind.covers ?? defaultCovers;
    const matching = (this.effective.get(r.kind) ?? []).filter((g) => covers(g.id, r.id));
    if (!matching.length) return { refused: `${r.label ?? r.id} is not shared with this agent (grants.${r.kind}).` };
    const usable = writes ? matching.filter((g) => g.access !== 'read') : matching;
    if (!usable.length) return { refused: `${r.label ?? r.id} is shared read-only.` };
    // The most specific grant decides (its alias and `ask`): an exact id before a `*`.
    const g = usable.find((x) => x.id === r.id) ?? usable.find((x) => x.id !== '*') ?? usable[0]!;
    return { grant: g };
  }

  on(_event: 'change', cb: () => void): void {
    this.events.on('change', cb);
  }

  off(_event: 'change', cb: () => void): void {
    this.events.off('change', cb);
  }

  /**
   * Adds a user grant (control.grants.add): validated against the kind's schema, inside the admin
   * ceiling, persisted, effective at once. Throws GrantError saying why not.
   */
  add(kind: string, entry: unknown): Grant {
    const k = this.kinds.get(kind);
    if (!k) throw new GrantError(`grants.${kind}`, `unknown grant kind (known kinds: ${this.kindNames().map((x) => x.kind).join(', ') || 'none'})`);
    const g = this.normalize(k.kind, entry, `grants.${kind}`, noResolve, 'user');
    const ceiling = this.ceilingProblem(g);
    if (ceiling) throw new GrantError(`grants.${kind}`, ceiling, 'ceiling');
    const current = this.effective.get(kind) ?? [];
    if (g.alias && current.some((x) => x.alias === g.alias && x.id !== g.id)) throw new GrantError(`grants.${kind}`, `another grant is already named "${g.alias}"`);
    this.user.added = this.user.added.filter((a) => !(a.kind === kind && this.idOf(a) === g.id));
    this.user.added.push({ kind, entry });
    this.user.removed = this.user.removed.filter((r) => !(r.kind === kind && r.id === g.id));
    this.writeUser();
    this.recompute(true);
    return g;
  }

  /** Removes a grant by alias or id (a configured one is hidden: the user narrows the ceiling). */
  remove(kind: string, name: string): boolean {
    const g = (this.effective.get(kind) ?? []).find((x) => x.alias === name) ?? (this.effective.get(kind) ?? []).find((x) => x.id === name);
    if (!g) return false;
    const before = this.user.added.length;
    this.user.added = this.user.added.filter((a) => !(a.kind === kind && this.idOf(a) === g.id));
    if (this.user.added.length === before || (this.admin.get(kind) ?? []).some((a) => a.id === g.id)) {
      this.user.removed.push({ kind, id: g.id });
    }
    this.writeUser();
    this.recompute(true);
    return true;
  }

  private idOf(a: { kind: string; entry: unknown }): string | undefined {
    const k = this.kinds.get(a.kind);
    if (!k) return undefined;
    try {
      return this.normalize(k.kind, a.entry, `grants.${a.kind}`, noResolve, 'user').id;
    } catch {
      return undefined;
    }
  }

  private normalize(k: GrantKind, entry: unknown, key: string, ctx: NormalizeContext, source: 'config' | 'user'): Grant {
    const v = schemaValidator.validate(k.entry, entry);
    if (v.length) {
      throw new GrantError(key, v.map((x) => `${x.pointer ? x.pointer.slice(1).replace(/\//g, '.') + ' ' : ''}${x.message}`).join('; '));
    }
    let g: ReturnType<GrantKind['normalize']>;
    try {
      g = k.normalize(entry as never, ctx);
    } catch (e) {
      throw new GrantError(key, (e as Error).message);
    }
    if (typeof g.id !== 'string' || g.id === '') throw new GrantError(key, 'the grant names no resource');
    const out: { -readonly [P in keyof Grant]: Grant[P] } = { kind: k.kind, id: g.id, source };
    if (g.alias !== undefined) out.alias = g.alias;
    if (g.ask !== undefined) out.ask = g.ask;
    if (g.access !== undefined) out.access = g.access;
    if (g.settings !== undefined) out.settings = g.settings;
    return out;
  }

  /** Why a user grant would widen the admin config (undefined when it stays inside). */
  private ceilingProblem(g: Grant): string | undefined {
    const admin = this.admin.get(g.kind);
    if (!admin) return undefined;
    const covers = this.kinds.get(g.kind)?.kind.covers ?? defaultCovers;
    const inside = admin.some(
      (a) => covers(a.id, g.id) && (a.access !== 'read' || g.access === 'read') && (a.ask !== 'always' || g.ask === 'always') && (a.id === '*' || g.id !== '*'),
    );
    return inside ? undefined : `the administrator's config does not share ${g.id}${g.access === 'read_write' ? ' for writing' : ''}; a user grant can only narrow it`;
  }

  private recompute(emit: boolean): void {
    const next = new Map<string, Grant[]>();
    for (const [kind, list] of this.admin) {
      next.set(kind, list.filter((g) => !this.user.removed.some((r) => r.kind === kind && r.id === g.id)));
    }
    for (const a of this.user.added) {
      const k = this.kinds.get(a.kind);
      if (!k) continue; // its handler is not loaded now; kept in the file for when it is
      let g: Grant;
      try {
        g = this.normalize(k.kind, a.entry, `grants.${a.kind}`, noResolve, 'user');
      } catch (e) {
        this.opts.log?.warn({ kind: a.kind, err: (e as Error).message }, 'a user grant no longer validates; ignored');
        continue;
      }
      const why = this.ceilingProblem(g);
      if (why) {
        this.opts.log?.warn({ kind: a.kind }, 'a user grant is outside the configured grants; ignored');
        continue;
      }
      const list = (next.get(a.kind) ?? []).filter((x) => x.id !== g.id);
      list.push(g);
      next.set(a.kind, list);
    }
    this.effective = next;
    if (emit) this.events.emit('change');
  }

  private readUser(): UserGrants {
    if (!this.opts.dataDir) return { version: 1, added: [], removed: [] };
    try {
      const doc = JSON.parse(readFileSync(join(this.opts.dataDir, USER_FILE), 'utf8')) as Partial<UserGrants>;
      return { version: 1, added: Array.isArray(doc.added) ? doc.added : [], removed: Array.isArray(doc.removed) ? doc.removed : [] };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') this.opts.log?.warn({ err: (e as Error).message }, 'user grants unreadable; starting from the config alone');
      return { version: 1, added: [], removed: [] };
    }
  }

  private writeUser(): void {
    if (this.opts.dataDir) writeJsonFileSync(join(this.opts.dataDir, USER_FILE), this.user, 0o600);
  }
}

function duplicateAlias(list: readonly Grant[]): string | undefined {
  const seen = new Set<string>();
  for (const g of list) {
    if (!g.alias) continue;
    if (seen.has(g.alias)) return g.alias;
    seen.add(g.alias);
  }
  return undefined;
}
