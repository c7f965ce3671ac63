/**
 * The precompiled validators (issue 32): every JSON Schema the program knows when it is built, generated
 * as ajv standalone code, one CommonJS file per schema named by `precompiledName` (a digest of the
 * schema, ajv's version and the options), so the agent validates them without compiling them, or loading
 * ajv, at start or on a function's first call (src/protocol/schema-validator.ts looks them up).
 *
 * The schemas: the protocol's messages and method params, the Adapter Card and tool manifest, the agent's
 * and the bridge's config files, the control API's params, the discovery methods' params, the adapter
 * approvals file, and of every built-in handler its grant kinds' entries and its functions' input and
 * output schemas (the handler created as `aios-device handler manifest` does: no grants, no options).
 * `npm run build` writes them to dist/validators/ (scripts/build-validators.mjs).
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kind } from '@sinclair/typebox';
import { GrantStore } from '../grants/grant-store.js';
import { silentLogger } from '../base/logger.js';
import { APP_VERSION, BUILTIN_HANDLERS_DIR } from '../version.js';
import { asInstance } from '../sdk/instance.js';
import { builtinHandlerNames } from '../agent/handlers-loader.js';
import { isDraft07, makeAjv, precompiledName, SchemaValidator } from '../protocol/schema-validator.js';
import * as messages from '../protocol/messages.js';
import * as manifestSchemas from '../protocol/manifest-schemas.js';
import * as agentConfig from '../config/agent-config.js';
import * as bridgeConfig from '../config/bridge-config.js';
import * as load from '../config/load.js';
import { CONTROL_API } from '../control/api.js';
import * as registryMethods from '../discovery/registry-methods.js';
import * as approvals from '../discovery/adapter-approvals.js';
import { importHandler } from './manifest.js';

const require = createRequire(import.meta.url);

/** A schema to precompile and where it comes from (for messages). */
export interface KnownSchema {
  origin: string;
  schema: object;
}

function isSchema(v: unknown): v is object {
  return typeof v === 'object' && v !== null && Kind in v;
}

/** The exported TypeBox schemas of a module, and those one level down in its exported tables. */
function exportedSchemas(name: string, mod: Record<string, unknown>): KnownSchema[] {
  const out: KnownSchema[] = [];
  for (const [k, v] of Object.entries(mod)) {
    if (isSchema(v)) out.push({ origin: `${name}.${k}`, schema: v });
    else if (v && typeof v === 'object' && !Array.isArray(v)) {
      for (const [k2, v2] of Object.entries(v as Record<string, unknown>)) if (isSchema(v2)) out.push({ origin: `${name}.${k}.${k2}`, schema: v2 });
    }
  }
  return out;
}

/** The core's own schemas (everything but the handlers'). */
export function coreSchemas(): KnownSchema[] {
  const out = [
    ...exportedSchemas('protocol/messages', messages),
    ...exportedSchemas('protocol/manifest-schemas', manifestSchemas),
    ...exportedSchemas('config/agent-config', agentConfig),
    ...exportedSchemas('config/bridge-config', bridgeConfig),
    ...exportedSchemas('config/load', load),
    ...exportedSchemas('discovery/registry-methods', registryMethods),
    ...exportedSchemas('discovery/adapter-approvals', approvals),
  ];
  for (const [k, spec] of Object.entries(CONTROL_API)) {
    out.push({ origin: `control/api.${k}.params`, schema: spec.params }, { origin: `control/api.${k}.result`, schema: spec.result });
  }
  return out;
}

/**
 * The built-in handlers' schemas: grant kinds' entries, functions' input and output schemas, from each
 * handler created with an empty environment (a throwaway data folder).
 */
export async function handlerSchemas(dir = BUILTIN_HANDLERS_DIR): Promise<KnownSchema[]> {
  const out: KnownSchema[] = [];
  for (const name of builtinHandlerNames(dir)) {
    const h = await importHandler(join(dir, name));
    const dataDir = mkdtempSync(join(tmpdir(), `aios-precompile-${name}-`));
    try {
      const grants = new GrantStore();
      if (h.grantKinds?.length) grants.registerKinds(h.name, h.grantKinds);
      for (const k of h.grantKinds ?? []) out.push({ origin: `handlers/${name} grant kind ${k.kind}`, schema: k.entry });
      const created = asInstance(await h.create({ grants, options: {}, dataDir, log: silentLogger(), appVersion: APP_VERSION, listFunctions: () => [] }));
      for (const f of created.functions) {
        out.push({ origin: `${f.descriptor.id} input_schema`, schema: f.descriptor.input_schema }, { origin: `${f.descriptor.id} output_schema`, schema: f.descriptor.output_schema });
      }
      await created.dispose?.();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  return out;
}

/** What {@link writeValidators} wrote. */
export interface Precompiled {
  /** File names written (one per distinct schema). */
  files: string[];
  /** Distinct schemas per origin, for messages. */
  origins: Map<string, string[]>;
}

/**
 * Generates the validator of every schema into `out` (emptied first). Each schema is checked as the
 * agent checks a descriptor's at registration (meta-schema, regular expressions), then compiled by ajv
 * with the validator's own options plus `code.source`, and written as standalone code.
 */
export function writeValidators(out: string, schemas: readonly KnownSchema[]): Precompiled {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const standaloneCode = require('ajv/dist/standalone') as { default: (ajv: unknown, fn: unknown) => string };
  // Without a precompiled folder: checks the schema with ajv, as for a schema the build does not know.
  const checker = new SchemaValidator(undefined);
  const origins = new Map<string, string[]>();
  for (const { origin, schema } of schemas) {
    const file = precompiledName(schema);
    const list = origins.get(file) ?? [];
    list.push(origin);
    origins.set(file, list);
    if (list.length > 1) continue;
    try {
      checker.checkSchema(schema);
      // One ajv per schema: the standalone code then holds only what this schema needs.
      const ajv = makeAjv(isDraft07(schema) ? 'draft-07' : '2020-12', { code: { source: true } });
      const fn = ajv.compile(schema);
      writeFileSync(join(out, file), `// Generated by src/kit/precompile.ts from ${origin}: ajv's standalone code.\n${standaloneCode.default(ajv, fn)}\n`);
    } catch (e) {
      throw new Error(`${origin}: ${(e as Error).message}`, { cause: e });
    }
  }
  return { files: readdirSync(out).sort(), origins };
}

/** The core's and the built-in handlers' validators into `out`. */
export async function buildValidators(out: string): Promise<Precompiled> {
  return writeValidators(out, [...coreSchemas(), ...(await handlerSchemas())]);
}
