/**
 * The Settings screen's control methods (local endpoint `/rpc`, local token required; the tray's IPC
 * calls the same functions): functions on and off, what the device lists for a grant kind, the log
 * level, and About. Grants themselves change through the consent handlers (src/consent/control-api.ts).
 */
import { randomUUID } from 'node:crypto';
import { dirname } from 'node:path';
import { RPC, RpcError, WireError } from '../protocol/errors.js';
import { CLIENT_PROTOCOL_VERSION } from '../protocol/messages.js';
import type { CallContext, GrantCandidate, GrantListing } from '../sdk/index.js';
import type { Logger } from '../base/logger.js';
import { APP_VERSION } from '../version.js';
import { LOG_LEVELS, type LogLevel } from '../control/api.js';
import type { ControlHandlers } from '../control/server.js';
import type { Agent } from './agent.js';
import { SwitchError, type FunctionSwitches } from './function-switches.js';
import type { UserSettingsFile } from './user-settings.js';
import { functionWordKeys } from '../sdk/function-words.js';
import { strings } from '../i18n/index.js';

export { LOG_LEVELS, type LogLevel } from '../control/api.js';
const isLogLevel = (v: unknown): v is LogLevel => typeof v === 'string' && (LOG_LEVELS as readonly string[]).includes(v);

/** Something a grant could be given for (declared with the grant kind's `listing`, src/sdk/grants.ts). */
export type { GrantCandidate } from '../sdk/index.js';

/** The kinds the agent's handlers declared with a listing, and each one's listing. */
export function grantListings(agent: Agent): Record<string, GrantListing> {
  const out: Record<string, GrantListing> = {};
  for (const { kind } of agent.grants.kindNames()) {
    const l = agent.grants.kindOf(kind)?.listing;
    if (l) out[kind] = l;
  }
  return out;
}

/** Sets a pino logger's level (its children follow); false for a logger that has no level to set. */
export function setLoggerLevel(log: Logger, level: LogLevel): boolean {
  const l = log as unknown as { level?: unknown; levels?: unknown };
  if (typeof l.level !== 'string' || !l.levels) return false;
  l.level = level;
  return true;
}

/** A pino logger's current level, if it has one. */
export function loggerLevel(log: Logger): string | undefined {
  const l = (log as unknown as { level?: unknown }).level;
  return typeof l === 'string' ? l : undefined;
}

const bad = (message: string): never => {
  throw new RpcError(RPC.invalid_params, message);
};

/** What the settings methods work on. */
export interface SettingsDeps {
  agent: Agent;
  switches: FunctionSwitches;
  settings: UserSettingsFile;
  /** The agent's root logger: its level is the one Settings changes. */
  log: Logger;
  /** Where the log is written (`log.file`), or undefined for stderr. */
  logFile: string | undefined;
}

/** Applies the log level the user chose earlier (kept in user-settings.json), if any. */
export function applyStoredLogLevel(d: Pick<SettingsDeps, 'settings' | 'log'>): void {
  const stored = d.settings.read().log_level;
  if (isLogLevel(stored)) setLoggerLevel(d.log, stored);
}

/**
 * Runs a grant kind's listing function for Settings, in this process, as the person at the device: no
 * consent prompt, no journal row and no audit row (it is not a runtime's call), a time limit of the
 * function's default timeout. A failure is the handler's own wire error (`device_unavailable` …).
 */
export async function listGrantCandidates(agent: Agent, kind: string, log: Logger): Promise<GrantCandidate[]> {
  const listing = agent.grants.kindOf(kind)?.listing;
  if (!listing) bad(`no listing for grant kind "${kind}" (kinds with one: ${Object.keys(grantListings(agent)).join(', ')})`);
  const reg = agent.registry.get(listing!.function);
  if (!reg) throw new WireError('device_unavailable', `The handler that lists ${kind} (${listing!.function}) is not loaded.`, { details: { reason: 'not_loaded' } });
  const callId = `settings-${randomUUID()}`;
  const temp = agent.temp.scope(callId);
  const signal = AbortSignal.timeout(reg.descriptor.timeout_ms_default);
  const ctx: CallContext = {
    tempFile: (ext) => temp.tempFile(ext),
    tempDir: () => temp.tempDir(),
    resources: [],
    callId,
    functionId: reg.descriptor.id,
    signal,
    requester: { kind: 'user', name: 'Settings' },
    log: log.child({ function: reg.descriptor.id, settings: true }),
    blobs: {
      uploadFile: () => Promise.reject(new WireError('invalid_arguments', 'Listing does not upload.')),
      downloadToFile: () => Promise.reject(new WireError('invalid_arguments', 'Listing does not download.')),
    },
    progress: () => undefined,
    commit: () => undefined,
  };
  try {
    return listing!.candidates(await reg.def.run(listing!.args ?? {}, ctx));
  } catch (e) {
    if (e instanceof WireError) throw e;
    if (signal.aborted) throw new WireError('timeout', `Listing ${kind} took longer than ${reg.descriptor.timeout_ms_default} ms.`);
    log.warn({ function: reg.descriptor.id, err: (e as Error).message }, 'listing for Settings failed');
    throw new WireError('execution_failed', `Listing ${kind} failed.`);
  } finally {
    await temp.close().catch(() => undefined);
  }
}

/** The Settings handlers of the control API (src/control/api.ts), by its keys; params arrive checked. */
export function settingsControlHandlers(d: SettingsDeps): ControlHandlers {
  return {
    listFunctions: () => ({
      functions: d.agent.registry.descriptors().map((f) => {
        const source = d.agent.registry.get(f.id)?.source;
        const words = source ? functionWordKeys(f.id, source) : undefined;
        return {
          id: f.id,
          name: f.name,
          description: f.description,
          ...(words ? { title_key: words.title } : {}),
          ...(words?.description ? { description_key: words.description } : {}),
          permission_level: f.permission_level,
          confirmation: f.confirmation,
          ...(f.risk ? { risk: f.risk } : {}),
          source,
          enabled: !d.switches.isDisabled(f.id),
          admin_disabled: d.switches.isAdminDisabled(f.id),
        };
      }),
    }),
    setFunction: ({ id, enabled }) => {
      if (!d.agent.registry.get(id)) bad(`no function is registered as ${id}`);
      try {
        return { function: d.switches.set(id, enabled) };
      } catch (e) {
        if (e instanceof SwitchError) throw new WireError('permission_denied', e.message, { details: { reason: 'admin_disabled' } });
        throw e;
      }
    },
    grantCandidates: async ({ kind }) => ({ kind, candidates: await listGrantCandidates(d.agent, kind, d.log) }),
    // The window's own chrome is its catalogue; the agent's command-line and trial sentences are not for it.
    i18nCatalogue: ({ locale }) => ({ locale, messages: strings.table(locale, (k) => !k.startsWith('cli.') && !k.startsWith('trial.')) }),
    getSettings: () => ({
      version: APP_VERSION,
      // The version the current bridge session speaks (null without one) and the one this client offers.
      protocol_version: d.agent.session?.protocolVersion ?? null,
      protocol_offered: CLIENT_PROTOCOL_VERSION,
      data_dir: d.agent.config.data_dir,
      log_file: d.logFile ?? null,
      logs_dir: d.logFile ? dirname(d.logFile) : null,
      log_level: loggerLevel(d.log) ?? null,
      log_levels: [...LOG_LEVELS],
      // Per grant kind with a listing: the key of an object entry that holds the id (`files` takes `path`).
      grant_id_keys: Object.fromEntries(Object.entries(grantListings(d.agent)).map(([k, l]) => [k, l.idKey])),
    }),
    setLogLevel: ({ level }) => {
      if (!setLoggerLevel(d.log, level)) throw new WireError('device_unavailable', 'This agent\'s logger has no level to change.');
      d.settings.update((doc) => ({ ...doc, log_level: level }));
      d.log.info({ level }, 'log level changed in Settings');
      return { log_level: loggerLevel(d.log) ?? null };
    },
  };
}

