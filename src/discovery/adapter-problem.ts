/**
 * Why an adapter cannot be used, said in the reader's language. A problem is a catalogue message (key and
 * params) plus, for a manifest that fails its schema, the violations themselves: they are rendered when
 * read, in the reader's locale — our own rewordings from the catalogue, ajv's other messages through
 * ajv-i18n. The English text stays the `message` (logs, `status.reason` on the wire, `--json` output); the
 * message travels beside it as plain data (`status.reason_message`), so a CLI talking to a running agent
 * says it in its own user's language.
 */
import localizeZh from 'ajv-i18n/localize/zh/index.js';
import type { ErrorObject } from 'ajv';
import { coreMessage, strings, type CoreKey, type Locale } from '../i18n/index.js';
import type { SchemaViolation } from '../protocol/schema-validator.js';

/** Params of a problem: text, numbers, or another problem (e.g. the one that refused the code). */
export type ProblemParams = Record<string, string | number | ProblemMessage>;

/** A problem as data: a `core.` catalogue key, its params, and the schema violations it names. */
export interface ProblemMessage {
  key: string;
  params?: ProblemParams;
  /** Rendered into the `{violations}` param, in the reader's locale (the first few only). */
  violations?: SchemaViolation[];
  /** How many violations there were past those kept in `violations` (counted when said). */
  more?: number;
}

/** A problem with its key checked at compile time. */
export function problem(key: CoreKey, params?: ProblemParams): ProblemMessage {
  return params ? { key, params } : { key };
}

/** An Error whose `message` is the English sentence of `said`. */
export class AdapterProblem extends Error {
  /** The sentence as data, to render in another locale with {@link renderProblem}. */
  readonly said: ProblemMessage;
  constructor(key: CoreKey, params?: ProblemParams, violations?: SchemaViolation[], options?: ErrorOptions) {
    // Only the violations that are said are kept (the message travels in registry answers); the rest are counted.
    const more = violations ? violations.length - MAX_VIOLATIONS : 0;
    const said: ProblemMessage = { key, ...(params && { params }), ...(violations && { violations: violations.slice(0, MAX_VIOLATIONS) }), ...(more > 0 && { more }) };
    super(renderProblem(said, 'en'), options);
    this.said = said;
    this.name = 'AdapterProblem';
  }
}

/**
 * The problem an error stands for: its own when it is an {@link AdapterProblem}, otherwise its English
 * message as the detail of `wrap` (default: the message alone), e.g. a signature library's reason.
 */
export function problemOf(e: unknown, wrap: CoreKey = 'core.adapter.detail'): ProblemMessage {
  if (e instanceof AdapterProblem) return wrap === 'core.adapter.detail' ? e.said : { key: wrap, params: { detail: e.said } };
  return { key: wrap, params: { detail: e instanceof Error ? e.message : String(e) } };
}

/** At most this many violations are named in one sentence (the rest would drown the first; they are counted). */
const MAX_VIOLATIONS = 3;

/**
 * ajv-i18n's translator for each of our locales that is not English: only the one file of each language
 * is loaded (its index would load all 23 at every start of the CLI and the agent). The module is CommonJS
 * whose types say `export default`: under NodeNext the default import is the function itself.
 */
const AJV_LOCALES: Partial<Record<Locale, (errors: ErrorObject[]) => void>> = { 'zh-CN': localizeZh as unknown as (errors: ErrorObject[]) => void };

/** ajv's own message for a violation, in `locale` when ajv-i18n has it (English otherwise). */
function ajvMessage(v: SchemaViolation, locale: Locale): string {
  const localize = AJV_LOCALES[locale];
  if (!localize || !v.keyword) return v.message;
  // ajv-i18n rewrites `message` in place from keyword and params: give it a copy.
  const copy = { keyword: v.keyword, params: v.params ?? {}, message: v.message, instancePath: v.pointer, schemaPath: '' } as ErrorObject;
  localize([copy]);
  return copy.message ?? v.message;
}

/** One violation: "<pointer> <what is wrong>" in `locale`. */
export function renderViolation(v: SchemaViolation, locale: Locale = 'en'): string {
  const list = (v.values ?? []).join(', ');
  let text: string;
  if (v.rule === 'not_allowed') text = strings.render(coreMessage('core.schema.not_allowed'), locale);
  else if (v.rule === 'required') text = strings.render(coreMessage('core.schema.required'), locale);
  else if (v.rule === 'one_of' && v.values?.length === 1) text = strings.render(coreMessage('core.schema.equal', { value: list }), locale);
  else if (v.rule === 'one_of') text = strings.render(coreMessage('core.schema.one_of', { values: list }), locale);
  else if (v.rule === 'exactly_one') text = strings.render(coreMessage('core.schema.exactly_one', { names: list }), locale);
  else text = ajvMessage(v, locale);
  return strings.render(coreMessage('core.schema.violation', { pointer: v.pointer || '/', text }), locale);
}

/**
 * The problem's sentence in `locale`. A key this build does not know (a newer agent's answer) renders
 * as `fallback` when given, so the reader still gets the English reason rather than a key.
 */
export function renderProblem(p: ProblemMessage, locale: Locale = 'en', fallback?: string): string {
  if (fallback !== undefined && !strings.has(p.key)) return fallback;
  const params: Record<string, string | number> = {};
  // Read back from JSON (a running agent's answer), so each part is checked before it is used.
  for (const [k, v] of Object.entries(p.params ?? {})) params[k] = isProblemMessage(v) ? renderProblem(v, locale) : typeof v === 'number' ? v : String(v);
  if (Array.isArray(p.violations)) {
    const shown = p.violations.slice(0, MAX_VIOLATIONS).map((v) => renderViolation(v, locale));
    // The rest are counted, so a developer knows the first fix is not the last.
    const rest = p.violations.length - shown.length + (typeof p.more === 'number' && p.more > 0 ? p.more : 0);
    if (rest > 0) shown.push(strings.render(coreMessage('core.schema.more', { n: rest }), locale));
    params['violations'] = shown.join(strings.render(coreMessage('core.schema.separator'), locale));
  }
  return strings.render({ key: p.key, params }, locale);
}

/** True for a value that has the shape of a {@link ProblemMessage} (read back from JSON). */
export function isProblemMessage(v: unknown): v is ProblemMessage {
  return !!v && typeof v === 'object' && typeof (v as ProblemMessage).key === 'string';
}
