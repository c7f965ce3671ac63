/**
 * Plain-language words for a function's risk and its requester, shared by the terminal prompt and the
 * desktop notice, in the user's locale (the core catalogue, src/i18n/core.ts).
 */
import { coreMessage, strings, type CoreKey, type Locale } from '../i18n/index.js';
import type { PromptView } from './prompt.js';

const say = (key: CoreKey, locale: Locale, params?: Record<string, string>): string => strings.render(coreMessage(key, params), locale);

/** E.g. "high (may change or delete data, acts in the physical world)". */
export function describeRisk(v: Pick<PromptView, 'permission_level' | 'risk'>, locale: Locale = 'en'): string {
  const notes: string[] = [];
  const r = v.risk;
  if (!r) notes.push(say('core.risk.changes_data', locale));
  else {
    if (r.destructive) notes.push(say('core.risk.changes_data', locale));
    else if (r.read_only) notes.push(say('core.risk.reads_only', locale));
    if (r.physical) notes.push(say('core.risk.physical', locale));
  }
  const levelKey = `core.level.${v.permission_level}` as CoreKey;
  const level = strings.has(levelKey) ? say(levelKey, locale) : v.permission_level;
  return notes.length ? say('core.risk.level', locale, { level, notes: notes.join(say('core.risk.separator', locale)) }) : level;
}

/** "Front-desk assistant (agent)" or "An unnamed requester". */
export function describeRequester(v: Pick<PromptView, 'requester'>, locale: Locale = 'en'): string {
  const q = v.requester;
  const name = q?.name ?? q?.id;
  if (!q || !name) return say('core.requester.unnamed', locale);
  return say('core.requester.named', locale, { name, kind: q.kind });
}
