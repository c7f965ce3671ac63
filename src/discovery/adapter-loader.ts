/**
 * Loads a third-party adapter's code once its card has been verified: a JS module whose default export is an
 * SDK `Handler`. The card's skills are authoritative; the module supplies the implementation of each one.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AnyFunctionDefinition, FunctionDefinition, Handler, HandlerEnv, HandlerInstance } from '../sdk/index.js';
import { asInstance } from '../sdk/instance.js';
import { jcs } from '../protocol/hash.js';
import { skillToDescriptor } from './card.js';
import { sha256Tag } from './code-binding.js';
import type { AdapterCard, CodeBinding } from '../protocol/manifest-schemas.js';

function isHandler(v: unknown): v is Handler {
  return !!v && typeof v === 'object' && typeof (v as Handler).name === 'string' && typeof (v as Handler).create === 'function';
}

/**
 * Imports `binding.entry` from `dir` and binds each card skill to the handler's function of the same id.
 * Throws an Error whose message is the reason shown in `registry.info`.
 */
export async function loadAdapterCode(dir: string, card: AdapterCard, binding: CodeBinding, env: HandlerEnv): Promise<{ functions: FunctionDefinition<never, unknown>[]; dispose: () => Promise<void> }> {
  // The query makes a changed entry a new module instance; ESM offers no way to unload the old one.
  const url = `${pathToFileURL(join(dir, ...binding.entry.split('/'))).href}?v=${sha256Tag(Buffer.from(jcs(binding.files))).slice(7, 23)}`;
  let mod: { default?: unknown };
  try {
    mod = (await import(url)) as { default?: unknown };
  } catch (e) {
    throw new Error(`the code failed to load: ${(e as Error).message.split('\n')[0]}`, { cause: e });
  }
  if (!isHandler(mod.default)) throw new Error('the code has no default export that is a Handler ({ name, create })');
  // Grant kinds belong to built-in handlers: an adapter names resources of existing kinds only.
  if (mod.default.grantKinds?.length) throw new Error('the handler declares grant kinds; third-party adapters may only use the kinds built-in handlers declare');
  let defs: readonly AnyFunctionDefinition[];
  let instance: HandlerInstance;
  try {
    instance = asInstance(await mod.default.create(env));
    defs = instance.functions;
  } catch (e) {
    throw new Error(`the handler failed to start: ${(e as Error).message.split('\n')[0]}`, { cause: e });
  }
  // Called when the adapter is unloaded or replaced (and at stop); once, and never throwing.
  let disposed: Promise<void> | undefined;
  const dispose = () => (disposed ??= Promise.resolve().then(() => instance.dispose?.()).catch((e: unknown) => env.log.warn({ err: String(e) }, 'the adapter\'s dispose failed')));
  const byId = new Map(defs.map((d) => [d.descriptor.id, d]));
  const missing = card.skills.find((skill) => !byId.has(skill.id));
  if (missing) {
    await dispose();
    throw new Error(`skill ${missing.id} has no implementation in the code`);
  }
  const functions = card.skills.map((skill) => {
    const impl = byId.get(skill.id)!;
    const def: FunctionDefinition<never, unknown> = { descriptor: skillToDescriptor(skill, card.adapter), run: (args, ctx) => impl.run(args, ctx) };
    if (impl.describe) def.describe = (a, r) => impl.describe?.(a, r) ?? '';
    if (impl.resources) def.resources = (a, c) => impl.resources?.(a, c) ?? [];
    return def;
  });
  return { functions, dispose };
}
