/**
 * JSON Schema validation (ajv) with violations reported as JSON Pointers (§2 invalid_arguments): 2020-12,
 * and draft-07 for a schema that declares it (`$schema`), as schemas MCP servers built with zod publish.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { Ajv as AjvDraft07 } from 'ajv';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020 | AjvDraft07) => void;

/** `$schema` values of draft-07 (and the drafts it reads alike), with or without the trailing `#`. */
const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-0[67]\/schema#?$/;

/** True when a schema declares draft-07 (or draft-06) as its dialect. */
export function isDraft07(schema: object): boolean {
  const s = (schema as { $schema?: unknown }).$schema;
  return typeof s === 'string' && DRAFT_07.test(s);
}

/** One schema violation. */
export interface Violation {
  pointer: string;
  message: string;
}

/**
 * A violation with what is needed to say it in another language: `rule` names our own rewordings
 * (`values`/`names` hold their JSON-quoted list), `ajv` keeps ajv's keyword and params for ajv-i18n.
 * Plain data, so it survives JSON (the agent's `registry.info` answer) and can be rendered by the reader.
 */
export interface SchemaViolation extends Violation {
  rule: 'not_allowed' | 'required' | 'one_of' | 'exactly_one' | 'ajv';
  /** `one_of`: the allowed values; `exactly_one`: the property names (each JSON-quoted). */
  values?: string[];
  /** `ajv`: the keyword and params ajv reported (what ajv-i18n localises from). */
  keyword?: string;
  params?: Record<string, unknown>;
}

/** Compiles and caches schemas; one instance per process is enough. */
export class SchemaValidator {
  private readonly ajv: Ajv2020;
  /** For schemas that declare draft-07; made on first use. */
  private draft07: AjvDraft07 | undefined;
  private readonly cache = new WeakMap<object, ValidateFunction>();

  constructor() {
    // verbose: errors carry their schema, so that a `oneOf` of alternatives can be named (toViolations).
    this.ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true, verbose: true });
    addFormats(this.ajv);
  }

  /**
   * Throws when a schema is not a valid JSON Schema of its dialect (checked against the meta-schema, without
   * compiling it): used at registration, so a bad descriptor never loads, while the schema itself compiles
   * on its first use (issue 32: an agent at rest holds no validator of a function nobody called).
   */
  checkSchema(schema: object): void {
    const ajv = isDraft07(schema) ? this.draft07Ajv() : this.ajv;
    if (!ajv.validateSchema(schema)) throw new Error(ajv.errorsText(ajv.errors));
    // The meta-schema does not check regular expressions; compiling does (as ajv does: Unicode mode).
    checkPatterns(schema);
  }

  /** Compiles (once per schema object); throws when the schema cannot be compiled. */
  compile(schema: object): ValidateFunction {
    let fn = this.cache.get(schema);
    if (!fn) {
      fn = isDraft07(schema) ? this.draft07Ajv().compile(schema) : this.ajv.compile(schema);
      this.cache.set(schema, fn);
    }
    return fn;
  }

  private draft07Ajv(): AjvDraft07 {
    if (!this.draft07) {
      this.draft07 = new AjvDraft07({ allErrors: true, strict: false, validateFormats: true, verbose: true });
      addFormats(this.draft07);
    }
    return this.draft07;
  }

  /** Validates `value`; returns [] when valid. */
  validate(schema: object, value: unknown): Violation[] {
    // On the call path: a valid value allocates nothing.
    const fn = this.compile(schema);
    return fn(value) ? [] : toViolations(fn.errors ?? []);
  }

  /** Like {@link validate}, with each violation's rule kept so a reader can say it in their language. */
  check(schema: object, value: unknown): SchemaViolation[] {
    const fn = this.compile(schema);
    if (fn(value)) return [];
    return toSchemaViolations(fn.errors ?? []);
  }
}

/** Throws for the first `pattern` or `patternProperties` key that is not a regular expression. */
function checkPatterns(node: unknown): void {
  if (Array.isArray(node)) {
    for (const x of node) checkPatterns(x);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const o = node as Record<string, unknown>;
  const patterns = [typeof o['pattern'] === 'string' ? o['pattern'] : undefined, ...(o['patternProperties'] && typeof o['patternProperties'] === 'object' ? Object.keys(o['patternProperties']) : [])];
  for (const p of patterns) {
    if (p === undefined) continue;
    try {
      new RegExp(p, 'u');
    } catch (e) {
      throw new Error(`pattern ${JSON.stringify(p)} is not a regular expression: ${(e as Error).message}`, { cause: e });
    }
  }
  for (const [k, v] of Object.entries(o)) if (!DATA_KEYWORDS.has(k)) checkPatterns(v);
}

/** Keywords whose values are data, not schemas (a `pattern` key inside them is no regular expression). */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples']);

function escapePointer(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Maps ajv errors to JSON Pointers of the offending value (missing and extra properties point at the property). */
export function toViolations(errors: ErrorObject[]): Violation[] {
  return toSchemaViolations(errors).map(({ pointer, message }) => ({ pointer, message }));
}

/** {@link toViolations} with each violation's rule (see {@link SchemaViolation}). */
export function toSchemaViolations(errors: ErrorObject[]): SchemaViolation[] {
  const out: SchemaViolation[] = [];
  const seen = new Set<string>();
  // A union of literals fails as one `const` error per literal plus an `anyOf`: say it once, with the values.
  const allowed = new Map<string, unknown[]>();
  for (const e of errors) {
    if (e.keyword !== 'const') continue;
    const list = allowed.get(e.instancePath) ?? [];
    list.push((e.params as { allowedValue?: unknown }).allowedValue);
    allowed.set(e.instancePath, list);
  }
  const quoted = (values: unknown[]) => values.map((v) => JSON.stringify(v));
  const oneOf = (values: unknown[]) => (values.length === 1 ? `must be ${JSON.stringify(values[0])}` : `must be one of ${quoted(values).join(', ')}`);
  // A `oneOf` of alternatives ({ required: [a] } | { required: [b] }…) fails as "a is required", "b is
  // required" and "must match exactly one schema": say which properties, once.
  const alternatives = new Map<string, string[]>();
  for (const e of errors) {
    if (e.keyword !== 'oneOf' || !Array.isArray(e.schema)) continue;
    const names = (e.schema as { required?: unknown }[]).map((b) => (Array.isArray(b.required) && b.required.length === 1 && Object.keys(b).length === 1 ? String(b.required[0]) : undefined));
    if (names.every((n) => n !== undefined)) alternatives.set(e.schemaPath, names as string[]);
  }
  const inAlternatives = (schemaPath: string) => [...alternatives.keys()].some((k) => schemaPath.startsWith(k + '/'));
  for (const e of errors) {
    if (alternatives.size && e.keyword === 'required' && inAlternatives(e.schemaPath)) continue;
    let pointer = e.instancePath;
    const p = e.params as Record<string, unknown>;
    if (e.keyword === 'required' && typeof p['missingProperty'] === 'string') pointer += '/' + escapePointer(p['missingProperty']);
    if (e.keyword === 'additionalProperties' && typeof p['additionalProperty'] === 'string') pointer += '/' + escapePointer(p['additionalProperty']);
    const values = allowed.get(e.instancePath);
    let v: Omit<SchemaViolation, 'pointer'>;
    if (e.keyword === 'additionalProperties') v = { message: 'is not an allowed property', rule: 'not_allowed' };
    else if (e.keyword === 'required') v = { message: 'is required', rule: 'required' };
    else if (e.keyword === 'enum' && Array.isArray(p['allowedValues'])) v = { message: oneOf(p['allowedValues']), rule: 'one_of', values: quoted(p['allowedValues']) };
    else if ((e.keyword === 'const' || e.keyword === 'anyOf') && values) v = { message: oneOf(values), rule: 'one_of', values: quoted(values) };
    else if (e.keyword === 'oneOf' && alternatives.has(e.schemaPath)) {
      const names = quoted(alternatives.get(e.schemaPath)!);
      v = { message: `must have exactly one of ${names.join(', ')}`, rule: 'exactly_one', values: names };
    } else v = { message: e.message ?? 'is invalid', rule: 'ajv', keyword: e.keyword, params: { ...p } };
    const key = pointer + '\0' + v.message;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ pointer: pointer || '', ...v });
  }
  return out;
}

/** The process-wide validator. */
export const schemaValidator = new SchemaValidator();
