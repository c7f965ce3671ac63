/**
 * A desktop notification saying a confirmation prompt is waiting, through the agent's one way of showing
 * notices (`showNotice`): without a notification service it is only logged, and the prompt itself
 * still waits in the UI.
 */
import type { Logger } from '../base/logger.js';
import { showNotice } from '../base/user-notice.js';
import { silentLogger } from '../base/logger.js';
import { describeRequester, promptWords } from './describe-risk.js';
import { coreMessage, strings, type Locale } from '../i18n/index.js';
import type { PromptView } from './prompt.js';

/** Tells the user a prompt is waiting (no argument values, only who asks and the function name). */
export function notifyPromptWaiting(view: PromptView, log?: Logger, locale: Locale = 'en'): void {
  const title = strings.render(coreMessage('core.notice.prompt_title'), locale);
  const body = strings.render(coreMessage('core.notice.prompt_body', { requester: describeRequester(view, locale), function: promptWords(view, locale).title }), locale);
  void showNotice(title, body, log ?? silentLogger());
}
