/**
 * Reading YAML/JSON config files and checking them against a schema, with errors that name the key.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import YAML from 'yaml';
import { yamlErrorParts } from '../base/yaml-error.js';
import { Type, type TSchema } from '@sinclair/typebox';
import { schemaValidator, type SchemaViolation } from '../protocol/schema-validator.js';
import { coreMessage, strings, type Locale, type Message } from '../i18n/index.js';

/**
 * One problem of a config file, as data so it can be said in the reader's language: a catalogue message,
 * a schema violation of the key it names (dotted, e.g. `limits.max_concurrent_calls`), or English text
 * from checks that have no message of their own (the handlers' `grants.<kind>` checks).
 */
export type ConfigProblem = string | Message | { readonly key: string; readonly violation: SchemaViolation };

/**
 * Says a schema violation in a locale (`pointer` holds the quoted key). The renderer with ajv-i18n lives
 * above this layer (src/discovery/adapter-problem.ts): whoever prints the error passes it in.
 */
export type ViolationText = (v: SchemaViolation, locale: Locale) => string;

/** A violation in English: the quoted key, then ajv's (or our) words, as the wire says them. */
const englishViolation: ViolationText = (v) => `${v.pointer} ${v.message}`;

/** A problem's sentence in `locale` (violations through `violationText`). */
export function renderConfigProblem(p: ConfigProblem, locale: Locale = 'en', violationText: ViolationText = englishViolation): string {
  if (typeof p === 'string') return p;
  if ('violation' in p) return violationText({ ...p.violation, pointer: JSON.stringify(p.key) }, locale);
  return strings.render(p, locale);
}

/** A config problem; `message` names the key and says why (English); {@link ConfigError.say} in another language. */
export class ConfigError extends Error {
  /** The problems in English, one sentence each. */
  readonly problems: string[];
  constructor(
    readonly file: string,
    readonly reasons: readonly ConfigProblem[],
  ) {
    const problems = reasons.map((p) => renderConfigProblem(p));
    super(`${file}: ${problems.join('; ')}`);
    this.problems = problems;
    this.name = 'ConfigError';
  }

  /** The problems in `locale`, one sentence each. */
  say(locale: Locale, violationText?: ViolationText): string[] {
    return this.reasons.map((p) => renderConfigProblem(p, locale, violationText));
  }
}

/** The parser's complaint: its line and column as params, its own words (English only) as the detail. */
function yamlProblem(e: unknown): Message {
  const { line, column, detail } = yamlErrorParts(e);
  if (line === undefined || column === undefined) return coreMessage('core.config.not_yaml', { detail });
  return coreMessage('core.config.not_yaml_at', { line, column, detail });
}

/** Parses a YAML or JSON file into a plain object (YAML is a superset of JSON). */
export function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(file, [coreMessage('core.config.unreadable', { code: (e as NodeJS.ErrnoException).code ?? 'error' })]);
  }
  let doc: unknown;
  try {
    doc = YAML.parse(text, { prettyErrors: true, uniqueKeys: true });
  } catch (e) {
    throw new ConfigError(file, [yamlProblem(e)]);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(file, [coreMessage('core.config.not_mapping')]);
  return doc as Record<string, unknown>;
}

/** Checks `doc` against `schema`; unknown keys and wrong types become one message each, naming the key. */
export function checkConfig<T>(file: string, doc: unknown, schema: TSchema): T {
  const v = schemaValidator.check(schema, doc);
  if (v.length) {
    throw new ConfigError(
      file,
      v.map((x): ConfigProblem => {
        const key = x.pointer.replace(/^\//, '').replace(/\//g, '.') || '(top level)';
        return x.rule === 'not_allowed' ? coreMessage('core.config.unknown_key', { key }) : { key, violation: x };
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
