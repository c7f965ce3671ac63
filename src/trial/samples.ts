/**
 * Arguments for the trial's contract checks, made from a function's input schema: one minimal valid
 * instance, and mutations of it that the device must refuse with `invalid_arguments` at a known pointer.
 *
 * Written here rather than taken from a schema faker: the trial needs the *smallest* deterministic
 * instance (so a run is reproducible and touches as little as possible) and, for each mutation, the JSON
 * Pointer the device is expected to name; fakers give random instances and no pointers.
 */
import { schemaValidator } from '../protocol/schema-validator.js';
import { strings, type Message } from '../i18n/index.js';
import { m } from './say.js';

type Schema = Record<string, unknown>;

/** A generated instance, or why none could be made (`why` for the report, `reason` its English text). */
export type Sample = { ok: true; value: unknown } | { ok: false; reason: string; why: Message };

/** Why no instance could be generated, as a catalogue message. */
class CannotGenerate extends Error {
  constructor(readonly why: Message) {
    super(strings.render(why, 'en'));
  }
}

const isObj = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

function typeOf(s: Schema): string | undefined {
  const t = s['type'];
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) return t.find((x) => x !== 'null') as string | undefined;
  if (isObj(s['properties'])) return 'object';
  return undefined;
}

/** The smallest instance of `s` this generator can vouch for (checked with the real validator). */
export function sampleValid(schema: Schema): Sample {
  let value: unknown;
  try {
    value = minimal(schema, 0);
  } catch (e) {
    const why = e instanceof CannotGenerate ? e.why : m('trial.m.sample.error', { error: (e as Error).message });
    return { ok: false, reason: strings.render(why, 'en'), why };
  }
  const problems = schemaValidator.validate(schema, value);
  if (problems.length) {
    const why = m('trial.m.sample.invalid', { pointer: problems[0]!.pointer || '/', message: problems[0]!.message });
    return { ok: false, reason: strings.render(why, 'en'), why };
  }
  return { ok: true, value };
}

function minimal(s: Schema, depth: number): unknown {
  if (depth > 20) throw new CannotGenerate(m('trial.m.sample.deep'));
  if ('const' in s) return s['const'];
  if (Array.isArray(s['enum'])) return s['enum'][0];
  if ('default' in s) return s['default'];
  if (Array.isArray(s['examples']) && s['examples'].length) return s['examples'][0];
  for (const k of ['oneOf', 'anyOf'] as const) {
    const alts = s[k];
    if (Array.isArray(alts)) {
      // The first alternative that validates on its own and against the whole schema.
      const tried: Message[] = [];
      for (const alt of alts) {
        if (!isObj(alt)) continue;
        try {
          const v = minimal(merge(omit(s, k), alt), depth + 1);
          if (!schemaValidator.validate(s, v).length) return v;
          tried.push(m('trial.m.sample.alt_refused'));
        } catch (e) {
          tried.push(e instanceof CannotGenerate ? e.why : m('trial.m.sample.error', { error: (e as Error).message }));
        }
      }
      const reasons = tried.reduce<Message | undefined>((a, b) => (a ? m('trial.m.list', { a, b }) : b), undefined) ?? m('trial.m.sample.no_alternatives');
      throw new CannotGenerate(m('trial.m.sample.no_alternative', { keyword: k, reasons }));
    }
  }
  if (Array.isArray(s['allOf'])) return minimal((s['allOf'] as Schema[]).reduce((a, b) => merge(a, b), omit(s, 'allOf')), depth + 1);
  switch (typeOf(s)) {
    case 'object': {
      const props = isObj(s['properties']) ? s['properties'] : {};
      const out: Record<string, unknown> = {};
      for (const k of (s['required'] as string[] | undefined) ?? []) {
        const p = props[k];
        out[k] = isObj(p) ? minimal(p, depth + 1) : null;
      }
      return out;
    }
    case 'array': {
      const n = typeof s['minItems'] === 'number' ? s['minItems'] : 0;
      const items = isObj(s['items']) ? s['items'] : {};
      return Array.from({ length: n }, () => minimal(items, depth + 1));
    }
    case 'string': {
      if (typeof s['format'] === 'string') {
        const f = FORMATS[s['format']];
        if (f === undefined) throw new CannotGenerate(m('trial.m.sample.format', { format: s['format'], formats: Object.keys(FORMATS).join(', ') }));
        return f;
      }
      const n = typeof s['minLength'] === 'number' ? s['minLength'] : 1;
      if (typeof s['pattern'] === 'string') {
        // The smallest of a few plain candidates that the pattern and the length limits accept.
        const re = new RegExp(s['pattern'], 'u');
        const max = typeof s['maxLength'] === 'number' ? s['maxLength'] : Infinity;
        const fit = PATTERN_CANDIDATES.map((c) => c.repeat(Math.max(1, Math.ceil(n / Math.max(1, c.length))))).find((c) => c.length >= n && c.length <= max && re.test(c));
        if (fit === undefined) throw new CannotGenerate(m('trial.m.sample.pattern', { pattern: s['pattern'] }));
        return fit;
      }
      return 'x'.repeat(n);
    }
    case 'integer':
    case 'number': {
      if (typeof s['minimum'] === 'number') return s['minimum'];
      if (typeof s['exclusiveMinimum'] === 'number') return typeOf(s) === 'integer' ? Math.floor(s['exclusiveMinimum']) + 1 : s['exclusiveMinimum'] + 1;
      if (typeof s['maximum'] === 'number') return Math.min(0, s['maximum']);
      return 0;
    }
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return {};
  }
}

/** Instances for the string formats the trial generates (each valid by the validator's format check). */
const FORMATS: Record<string, string> = {
  'date-time': new Date(0).toISOString(),
  date: '1970-01-01',
  time: '00:00:00Z',
  uri: 'https://example.invalid/',
  'uri-reference': '/',
  url: 'https://example.invalid/',
  email: 'trial@example.invalid',
  hostname: 'example.invalid',
  ipv4: '192.0.2.1',
  ipv6: '2001:db8::1',
  uuid: '00000000-0000-4000-8000-000000000000',
};

/** Strings tried against a `pattern`, shortest and plainest first. */
const PATTERN_CANDIDATES = ['x', 'a', '0', 'aa', '00', 'abcd', '0000', 'a-b', 'a_b', 'a.b', 'aaaa0000', '00000000-0000-4000-8000-000000000000'];

/** Two schemas as one: properties merged, `required` the union (an alternative adds to what the base requires). */
function merge(a: Schema, b: Schema): Schema {
  const out: Schema = { ...a, ...b };
  if (isObj(a['properties']) || isObj(b['properties'])) out['properties'] = { ...(isObj(a['properties']) ? a['properties'] : {}), ...(isObj(b['properties']) ? b['properties'] : {}) };
  if (Array.isArray(a['required']) || Array.isArray(b['required'])) out['required'] = [...new Set([...((a['required'] as string[] | undefined) ?? []), ...((b['required'] as string[] | undefined) ?? [])])];
  return out;
}

function omit(s: Schema, k: string): Schema {
  const { [k]: _drop, ...rest } = s;
  return rest;
}

/** One invalid variant of a valid instance, with where the device should say it is wrong. */
export interface Mutation {
  kind: 'missing_required' | 'wrong_type' | 'extra_field' | 'out_of_range';
  args: Record<string, unknown>;
  /** The pointer the device's `invalid_arguments` must name: the field itself (missing, extra or wrong). */
  pointer: string;
  /** Also right: the object that lacks or has too much (where plain JSON Schema validators point). */
  parent?: string;
  what: string;
}

/** Invalid variants of `valid` (an object): at most one of each kind, each still invalid by the real validator. */
export function mutations(schema: Schema, valid: Record<string, unknown>): Mutation[] {
  const out: Mutation[] = [];
  const props = isObj(schema['properties']) ? schema['properties'] : {};
  const required = (schema['required'] as string[] | undefined) ?? [];
  const first = required[0];
  if (first !== undefined) {
    const { [first]: _gone, ...rest } = valid;
    out.push({ kind: 'missing_required', args: rest, pointer: '/' + escape(first), parent: '', what: `without the required field "${first}"` });
  }
  const typed = Object.keys(valid).find((k) => isObj(props[k]) && typeOf(props[k] as Schema) !== undefined);
  if (typed !== undefined) {
    const t = typeOf(props[typed] as Schema);
    const wrong = t === 'string' ? 12345 : 'not-a-' + t;
    out.push({ kind: 'wrong_type', args: { ...valid, [typed]: wrong }, pointer: '/' + escape(typed), what: `"${typed}" of the wrong type` });
  }
  if (schema['additionalProperties'] === false) {
    out.push({ kind: 'extra_field', args: { ...valid, aios_trial_extra: true }, pointer: '/aios_trial_extra', parent: '', what: 'an extra field "aios_trial_extra"' });
  }
  const ranged = Object.entries(props).find(([, p]) => isObj(p) && (typeof p['maximum'] === 'number' || typeof p['maxLength'] === 'number'));
  if (ranged) {
    const [k, p] = ranged as [string, Schema];
    const v = typeof p['maximum'] === 'number' ? p['maximum'] + 1 : 'x'.repeat((p['maxLength'] as number) + 1);
    out.push({ kind: 'out_of_range', args: { ...valid, [k]: v }, pointer: '/' + escape(k), what: `"${k}" beyond its limit` });
  }
  // Keep only what the published schema itself refuses: a check must not blame the device for our guess.
  return out.filter((m) => schemaValidator.validate(schema, m.args).length > 0);
}

function escape(k: string): string {
  return k.replace(/~/g, '~0').replace(/\//g, '~1');
}
