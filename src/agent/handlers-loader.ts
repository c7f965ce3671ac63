/**
 * Loads the built-in handlers (one folder each under `handlers/`) into the function registry.
 * One broken handler is logged and skipped; it never stops the agent.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { GrantKind, Handler, HandlerEnv } from '../sdk/index.js';
import type { Logger } from '../base/logger.js';
import { catalogueDirs, instantiate, type LoadedHandler } from '../sdk/instance.js';
import { BUILTIN_HANDLERS_DIR, MODULE_EXT } from '../version.js';
import type { FunctionRegistry } from './registry.js';

/** Result of loading one handler folder. */
export interface HandlerLoadResult {
  name: string;
  functions: string[];
  error?: string;
  /** The running handler (its lifecycle hooks), when it loaded. */
  instance?: LoadedHandler;
}

/** Names of the built-in handler folders. */
export function builtinHandlerNames(dir = BUILTIN_HANDLERS_DIR): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(dir, e.name, 'index' + MODULE_EXT)))
    .map((e) => e.name)
    .sort();
}

/** What the loader does with the grant kinds the handlers declare. */
export interface GrantKindSink {
  registerKinds(owner: string, kinds: readonly GrantKind[]): void;
}

/**
 * Imports every handler first (so all grant kinds are known), lets `afterImport` check the config's
 * grants against them (it throws to refuse the start), then creates and registers each handler.
 * A handler that fails to import or create is logged and skipped.
 */
export async function loadHandlers(
  names: readonly string[],
  registry: FunctionRegistry,
  envFor: (name: string) => HandlerEnv,
  log: Logger,
  dir = BUILTIN_HANDLERS_DIR,
  grants?: { sink: GrantKindSink; afterImport(): void },
): Promise<HandlerLoadResult[]> {
  const results: HandlerLoadResult[] = [];
  const imported: Handler[] = [];
  const failed = (name: string, e: unknown): void => {
    const error = (e as Error).message;
    log.error({ handler: name, err: error }, 'handler failed to load; its functions are unavailable');
    results.push({ name, functions: [], error });
  };
  for (const name of names) {
    try {
      // The built agent's bundle (scripts/build-agent-bundle.mjs) replaces this import with its own for the
      // built-in folder, found by this exact text: change both together.
      const mod = (await import(pathToFileURL(join(dir, name, 'index' + MODULE_EXT)).href)) as { default?: Handler };
      const h = mod.default;
      if (!h || typeof h.create !== 'function') throw new Error('its module has no default Handler export');
      if (h.name !== name) throw new Error(`its handler name "${h.name}" does not match its folder`);
      if (h.grantKinds?.length) {
        if (!grants) throw new Error('it declares grant kinds, which only built-in handlers may do');
        grants.sink.registerKinds(name, h.grantKinds);
      }
      imported.push(h);
    } catch (e) {
      failed(name, e);
    }
  }
  grants?.afterImport();
  for (const h of imported) {
    try {
      const env = envFor(h.name);
      if (h.optIn && env.options['enabled'] !== true) {
        results.push({ name: h.name, functions: [] });
        continue;
      }
      const instance = await instantiate(h, env, { catalogueDirs: catalogueDirs(h.name, dir) });
      const defs = instance.functions;
      try {
        registry.register(h.name, defs);
      } catch (e) {
        await instance.dispose();
        throw e;
      }
      results.push({ name: h.name, functions: defs.map((d) => d.descriptor.id), instance });
    } catch (e) {
      failed(h.name, e);
    }
  }
  return results.sort((a, b) => names.indexOf(a.name) - names.indexOf(b.name));
}
