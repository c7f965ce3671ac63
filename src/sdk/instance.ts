/**
 * Turns a handler module into a running instance the agent (or the test host) can drive: calls
 * `create(env)`, accepts both of its return forms, loads the handler's string catalogues, and runs the
 * lifecycle hooks one at a time, never letting a hook's failure escape.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readCatalogueDir, strings, type Catalogue } from '../i18n/index.js';
import { BUILTIN_HANDLERS_DIR, PROJECT_ROOT } from '../version.js';
import type { AnyFunctionDefinition, Handler, HandlerCreated, HandlerEnv, HandlerInstance, Logger } from './index.js';

/** A created handler as its host sees it. */
export interface LoadedHandler {
  readonly name: string;
  readonly functions: readonly AnyFunctionDefinition[];
  /** Runs `dispose` (once; later calls wait for the same run). */
  dispose(): Promise<void>;
  /** Runs `onPause` / `onResume` (in order; a hook that throws is logged). */
  pause(): Promise<void>;
  resume(): Promise<void>;
}

/** The functions and hooks of what `create()` returned. */
export function asInstance(created: HandlerCreated): HandlerInstance {
  return isFunctionList(created) ? { functions: created } : created;
}

function isFunctionList(c: HandlerCreated): c is readonly AnyFunctionDefinition[] {
  return Array.isArray(c);
}

/**
 * The folders a handler's catalogue may be in: next to its source (tsx, tests), then next to the
 * build's handlers (the compiled app keeps the JSON in handlers/, beside tool.aios.yaml).
 */
export function catalogueDirs(name: string, handlersDir = BUILTIN_HANDLERS_DIR): string[] {
  return [...new Set([join(handlersDir, name, 'i18n'), join(PROJECT_ROOT, 'handlers', name, 'i18n')])];
}

/** Loads `<dir>/en.json`, `<dir>/zh-CN.json` of the first existing dir into `catalogue` under the handler's namespace. */
export function loadHandlerCatalogue(name: string, dirs: readonly string[], catalogue: Catalogue = strings): boolean {
  const dir = dirs.find((d) => existsSync(d));
  if (!dir) return false;
  const tables = readCatalogueDir(dir);
  for (const [locale, messages] of Object.entries(tables)) catalogue.add(name, locale as keyof typeof tables, messages);
  return true;
}

/** Creates a handler: its catalogue first (a broken one refuses the handler), then `create(env)`. */
export async function instantiate(h: Handler, env: HandlerEnv, opts: { catalogueDirs?: readonly string[]; log?: Logger } = {}): Promise<LoadedHandler> {
  loadHandlerCatalogue(h.name, opts.catalogueDirs ?? catalogueDirs(h.name));
  const inst = asInstance(await h.create(env));
  const log = opts.log ?? env.log;
  let chain: Promise<void> = Promise.resolve();
  let disposed: Promise<void> | undefined;
  const run = (hook: 'onPause' | 'onResume' | 'dispose'): Promise<void> => {
    chain = chain.then(async () => {
      try {
        await inst[hook]?.();
      } catch (e) {
        log.warn({ handler: h.name, hook, err: e instanceof Error ? e.message : String(e) }, 'a handler lifecycle hook failed');
      }
    });
    return chain;
  };
  return {
    name: h.name,
    functions: [...inst.functions],
    dispose: () => (disposed ??= run('dispose')),
    pause: () => (disposed ? Promise.resolve() : run('onPause')),
    resume: () => (disposed ? Promise.resolve() : run('onResume')),
  };
}
