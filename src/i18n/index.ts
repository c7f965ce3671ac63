/**
 * The process-wide string catalogue: core strings loaded here, each handler's added when it loads
 * (handlers/<name>/i18n). See catalogue.ts for the format and the fallback rule.
 */
import { Catalogue, type Message } from './catalogue.js';
import { en, zhCN, type CoreKey } from './core.js';
import { cliEn, cliZh } from './cli.js';
import { trialEn, trialZh } from './trial.js';
import { bridgeEn, bridgeZh } from './bridge.js';

export * from './catalogue.js';
export type { CoreKey };

/** The catalogue every part of the agent renders from. */
export const strings = new Catalogue();
strings.add('core', 'en', en);
strings.add('core', 'zh-CN', zhCN);
strings.add('cli', 'en', cliEn);
strings.add('cli', 'zh-CN', cliZh);
strings.add('trial', 'en', trialEn);
strings.add('trial', 'zh-CN', trialZh);
strings.add('bridge', 'en', bridgeEn);
strings.add('bridge', 'zh-CN', bridgeZh);

/** A core message, with its key checked at compile time. */
export function coreMessage(key: CoreKey, params?: Message['params']): Message {
  return params ? { key, params } : { key };
}
