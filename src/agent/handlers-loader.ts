/**
 * Loads the built-in handlers (one folder each under `handlers/`) into the function registry.
 * One broken handler is logged and skipped; it never stops the agent.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Handler, HandlerEnv, Logger } from '../sdk/index.js';
import { BUILTIN_HANDLERS_DIR, MODULE_EXT } from '../version.js';
import type { FunctionRegistry } from './registry.js';

/** Result of loading one handler folder. */
export interface HandlerLoadResult {
  name: string;
  functions: string[];
  error?: string;
}

/** Names of the built-in handler folders. */
export function builtinHandlerNames(dir = BUILTIN_HANDLERS_DIR): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(dir, e.name, 'index' + MODULE_EXT)))
    .map((e) => e.name)
    .sort();
}

/** Imports and registers handlers; returns what happened to each. */
export async function loadHandlers(
  names: readonly string[],
  registry: FunctionRegistry,
  envFor: (name: string) => HandlerEnv,
  log: Logger,
  dir = BUILTIN_HANDLERS_DIR,
): Promise<HandlerLoadResult[]> {
  const results: HandlerLoadResult[] = [];
  for (const name of names) {
    try {
      const mod = (await import(pathToFileURL(join(dir, name, 'index' + MODULE_EXT)).href)) as { default?: Handler };
      const h = mod.default;
      if (!h || typeof h.create !== 'function') throw new Error('its module has no default Handler export');
      if (h.name !== name) throw new Error(`its handler name "${h.name}" does not match its folder`);
      const defs = await h.create(envFor(name));
      registry.register(name, defs);
      results.push({ name, functions: defs.map((d) => d.descriptor.id) });
    } catch (e) {
      const error = (e as Error).message;
      log.error({ handler: name, err: error }, 'handler failed to load; its functions are unavailable');
      results.push({ name, functions: [], error });
    }
  }
  return results;
}
