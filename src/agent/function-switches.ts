/**
 * Functions on and off: the admin config's `functions.disabled` is the ceiling (a function it turns off
 * stays off, whatever the user says); the user may turn off any other function and turn it on again
 * (`control.functions.set`, the tray's Settings), persisted in `<data_dir>/user-settings.json` under
 * `functions.disabled`. A change takes effect at once: the dispatcher asks `isDisabled` on every call
 * (unknown_function), and `change` tells the agent to republish (tools_changed, card, skill index).
 */
import { EventEmitter } from 'node:events';
import type { Logger } from '../base/logger.js';
import { UserSettingsFile } from './user-settings.js';

/** A switch the user may not flip (the administrator turned the function off). */
export class SwitchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SwitchError';
  }
}

/** One function as Settings lists it. */
export interface FunctionSwitch {
  id: string;
  enabled: boolean;
  /** True when the admin config turns it off: the user cannot turn it on. */
  admin_disabled: boolean;
}

/** The on/off state of every function: admin ceiling plus the user's choices. */
export class FunctionSwitches {
  private readonly admin: ReadonlySet<string>;
  private user: Set<string>;
  private readonly events = new EventEmitter<{ change: [{ id: string; enabled: boolean }] }>();
  private readonly file: UserSettingsFile | undefined;

  constructor(opts: { adminDisabled?: readonly string[] | undefined; dataDir?: string | undefined; log?: Logger | undefined } = {}) {
    this.admin = new Set(opts.adminDisabled ?? []);
    this.file = opts.dataDir ? new UserSettingsFile(opts.dataDir, opts.log) : undefined;
    const stored = this.file?.read().functions?.disabled;
    this.user = new Set(Array.isArray(stored) ? stored.filter((x): x is string => typeof x === 'string') : []);
    this.events.setMaxListeners(0);
  }

  /** True when the function answers unknown_function and is published nowhere. */
  isDisabled(id: string): boolean {
    return this.admin.has(id) || this.user.has(id);
  }

  /** True when the administrator turned it off. */
  isAdminDisabled(id: string): boolean {
    return this.admin.has(id);
  }

  /** The state of each of these function ids. */
  list(ids: readonly string[]): FunctionSwitch[] {
    return ids.map((id) => ({ id, enabled: !this.isDisabled(id), admin_disabled: this.admin.has(id) }));
  }

  /**
   * Turns a function on or off for this user, persisted. Turning on one the admin turned off throws
   * SwitchError (the ceiling). Emits `change` only when the effective state changed.
   */
  set(id: string, enabled: boolean): FunctionSwitch {
    if (enabled && this.admin.has(id)) throw new SwitchError(`${id} is turned off by the administrator's config (functions.disabled); a user cannot turn it on`);
    const before = !this.isDisabled(id);
    if (enabled) this.user.delete(id);
    else this.user.add(id);
    this.file?.update((doc) => ({ ...doc, functions: { ...doc.functions, disabled: [...this.user].sort() } }));
    const after = !this.isDisabled(id);
    if (before !== after) this.events.emit('change', { id, enabled: after });
    return { id, enabled: after, admin_disabled: this.admin.has(id) };
  }

  /** Told of every effective change (the agent republishes). */
  on(_event: 'change', cb: (c: { id: string; enabled: boolean }) => void): void {
    this.events.on('change', cb);
  }
}
