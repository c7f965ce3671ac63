/**
 * Plain-language words for a function's risk and its requester, shared by the terminal prompt and the
 * desktop notice, in the user's locale (the core catalogue, src/i18n/core.ts).
 */
import { coreMessage, strings, type CoreKey, type Locale, type Message } from '../i18n/index.js';
import { riskMessage } from '../control/words.js';
import type { PromptView } from './prompt.js';

const say = (key: CoreKey, locale: Locale, params?: Record<string, string>): string => strings.render(coreMessage(key, params), locale);

/**
 * The level and what the risk flags mean, worded as the window words them (`riskMessage`, one sentence
 * for every surface), e.g. "Permission level: high · changes or deletes data, acts in the physical world".
 */
export function describeRisk(v: Pick<PromptView, 'permission_level' | 'risk'>, locale: Locale = 'en'): string {
  return strings.render(riskMessage(v, (k) => strings.has(k)) as Message, locale);
}

/**
 * Who asks, truthfully: the runtime the bridge attested first ("Front desk"), then what the runtime claims
 * only as a claim ("Front desk (says it is \"IT admin\")"); on a 1.1 bridge nothing is attested ("An
 * unverified runtime (says it is \"IT admin\")"). A claim equal to the attested name is not repeated.
 */
export function describeRequester(v: Pick<PromptView, 'requester' | 'runtime'>, locale: Locale = 'en'): string {
  const claimed = v.requester?.name ?? v.requester?.id;
  const runtime = v.runtime?.name;
  if (runtime) return claimed && claimed !== runtime ? say('core.asker.attested_says', locale, { runtime, claimed }) : say('core.asker.attested', locale, { runtime });
  return claimed ? say('core.asker.unverified_says', locale, { claimed }) : say('core.asker.unverified', locale);
}

/**
 * The prompt's title and sentence in `locale`: rendered from the keys the view carries (a built-in
 * function's title, the sentence describe() gave), so a surface speaks its own language whatever the
 * agent's; a third-party adapter's plain sentence is shown as written, marked as its own words.
 */
export function promptWords(v: Pick<PromptView, 'function_name' | 'sentence' | 'title_key' | 'sentence_message' | 'sentence_own_words'>, locale: Locale = 'en'): { title: string; sentence: string } {
  const title = v.title_key && strings.has(v.title_key) ? strings.render({ key: v.title_key }, locale) : v.function_name;
  if (v.sentence_own_words) return { title, sentence: say('core.prompt.own_words', locale, { sentence: v.sentence }) };
  const sentence = v.sentence_message && strings.has(v.sentence_message.key) ? strings.render(v.sentence_message, locale) : v.sentence;
  return { title, sentence };
}
