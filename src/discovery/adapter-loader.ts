/**
 * Loads a third-party adapter's code once its card has been verified: a JS module whose default export is an
 * SDK `Handler`. The card's skills are authoritative; the module supplies the implementation of each one.
 * The code runs from a private copy written from the bytes the check hashed, so swapping a file in the
 * adapter folder between the check and the import changes nothing that runs. A consequence: the code must be
 * self-contained (relative imports inside the folder and Node's built-ins), since a package outside the
 * folder was never signed.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AnyFunctionDefinition, FunctionDefinition, Handler, HandlerEnv, HandlerInstance } from '../sdk/index.js';
import { asInstance } from '../sdk/instance.js';
import { jcs } from '../protocol/hash.js';
import { skillToDescriptor } from './card.js';
import { sha256Tag, type CodeBytes } from './code-binding.js';
import type { AdapterCard, CodeBinding } from '../protocol/manifest-schemas.js';
import { AdapterProblem } from './adapter-problem.js';

function isHandler(v: unknown): v is Handler {
  return !!v && typeof v === 'object' && typeof (v as Handler).name === 'string' && typeof (v as Handler).create === 'function';
}

/** What {@link loadAdapterCode} needs: the verified card and binding, and the bytes that were checked. */
export interface AdapterCode {
  /** The adapter id (names its private copy). */
  id: string;
  /** A private folder (0700) that holds the copies. */
  codeDir: string;
  card: AdapterCard;
  binding: CodeBinding;
  /** Every bound file's bytes, exactly as hashed. */
  bytes: CodeBytes;
  env: HandlerEnv;
}

/**
 * Writes the checked bytes into a new `<codeDir>/<id>-<digest>-<random>/` (folders 0700, files 0600);
 * returns the folder. Each load gets its own folder: the dispose of an earlier load of the same code
 * (stopping its process, then removing its copy) may still be under way and must not remove this one.
 */
export async function privateCopy(code: Pick<AdapterCode, 'id' | 'codeDir' | 'binding' | 'bytes'>): Promise<string> {
  const digest = sha256Tag(Buffer.from(jcs(code.binding.files))).slice(7, 23);
  const dir = await mkdtemp(join(code.codeDir, `${code.id.replace(/[^A-Za-z0-9._-]/g, '_')}-${digest}-`));
  for (const [rel, bytes] of code.bytes) {
    const file = join(dir, ...rel.split('/'));
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    await writeFile(file, bytes, { mode: 0o600, flag: 'wx' });
  }
  return dir;
}

/**
 * Copies the checked code to a private folder, imports `binding.entry` from there and binds each card skill
 * to the handler's function of the same id. Throws an {@link AdapterProblem}: the reason shown in
 * `registry.info`.
 */
export async function loadAdapterCode(code: AdapterCode): Promise<{ functions: FunctionDefinition<never, unknown>[]; dispose: () => Promise<void> }> {
  const copy = await privateCopy(code);
  try {
    return await loadFromCopy(code, copy);
  } catch (e) {
    await rm(copy, { recursive: true, force: true });
    throw e;
  }
}

async function loadFromCopy(code: AdapterCode, copy: string): Promise<{ functions: FunctionDefinition<never, unknown>[]; dispose: () => Promise<void> }> {
  const { card, binding, env } = code;
  // The folder name carries the code's digest, so changed code is a new module instance; ESM cannot unload the old one.
  const url = pathToFileURL(join(copy, ...binding.entry.split('/'))).href;
  let mod: { default?: unknown };
  try {
    mod = (await import(url)) as { default?: unknown };
  } catch (e) {
    throw new AdapterProblem('core.adapter.load_failed', { detail: (e as Error).message.split('\n')[0]! }, undefined, { cause: e });
  }
  if (!isHandler(mod.default)) throw new AdapterProblem('core.adapter.no_handler');
  // Grant kinds belong to built-in handlers: an adapter names resources of existing kinds only.
  if (mod.default.grantKinds?.length) throw new AdapterProblem('core.adapter.grant_kinds');
  let defs: readonly AnyFunctionDefinition[];
  let instance: HandlerInstance;
  try {
    instance = asInstance(await mod.default.create(env));
    defs = instance.functions;
  } catch (e) {
    throw new AdapterProblem('core.adapter.start_failed', { detail: (e as Error).message.split('\n')[0]! }, undefined, { cause: e });
  }
  // Called when the adapter is unloaded or replaced (and at stop); once, and never throwing.
  let disposed: Promise<void> | undefined;
  const dispose = () =>
    (disposed ??= Promise.resolve()
      .then(() => instance.dispose?.())
      .catch((e: unknown) => env.log.warn({ err: String(e) }, 'the adapter\'s dispose failed'))
      .then(() => rm(copy, { recursive: true, force: true }))
      .catch(() => {}));
  const byId = new Map(defs.map((d) => [d.descriptor.id, d]));
  const missing = card.skills.find((skill) => !byId.has(skill.id));
  if (missing) {
    await dispose();
    throw new AdapterProblem('core.adapter.not_implemented', { skill: missing.id });
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
