/**
 * Reading YAML/JSON config files and checking them against a schema, with errors that name the key.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import YAML from 'yaml';
import { Type, type TSchema } from '@sinclair/typebox';
import { schemaValidator } from '../protocol/schema-validator.js';

/** A config problem; `message` names the key and says why. */
export class ConfigError extends Error {
  constructor(readonly file: string, readonly problems: string[]) {
    super(`${file}: ${problems.join('; ')}`);
    this.name = 'ConfigError';
  }
}

/** Parses a YAML or JSON file into a plain object (YAML is a superset of JSON). */
export function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(file, [`cannot read the file (${(e as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  let doc: unknown;
  try {
    doc = YAML.parse(text, { prettyErrors: true, uniqueKeys: true });
  } catch (e) {
    throw new ConfigError(file, [`not valid YAML or JSON: ${(e as Error).message.split('\n')[0]}`]);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(file, ['the top level must be a mapping of keys']);
  return doc as Record<string, unknown>;
}

/** Checks `doc` against `schema`; unknown keys and wrong types become one message each, naming the key. */
export function checkConfig<T>(file: string, doc: unknown, schema: TSchema): T {
  const v = schemaValidator.validate(schema, doc);
  if (v.length) {
    throw new ConfigError(
      file,
      v.map((x) => {
        const key = x.pointer.replace(/^\//, '').replace(/\//g, '.') || '(top level)';
        return x.message === 'is not an allowed property' ? `unknown key "${key}"` : `"${key}" ${x.message}`;
      }),
    );
  }
  return doc as T;
}

/** Resolves a path from a config file relative to that file's folder; expands a leading ~. */
export function resolvePath(file: string, p: string): string {
  if (p.startsWith('~/')) p = (process.env['HOME'] ?? '') + p.slice(1);
  return isAbsolute(p) ? p : resolve(dirname(file), p);
}

/** The `log` section both config files share: pino's levels only (pino refuses others at start-up). */
export const LogSection = Type.Object(
  {
    level: Type.Optional(Type.Union(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].map((x) => Type.Literal(x)))),
    file: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);
