/**
 * A desktop notification saying a confirmation prompt is waiting, through the agent's one way of showing
 * notices (`showNotice`): without a notification service it is only logged, and the prompt itself
 * still waits in the UI.
 */
import type { Logger } from '../sdk/index.js';
import { showNotice } from '../base/user-notice.js';
import { silentLogger } from '../base/logger.js';
import { describeRequester } from './describe-risk.js';
import type { PromptView } from './prompt.js';

/** Tells the user a prompt is waiting (no argument values, only who asks and the function name). */
export function notifyPromptWaiting(view: PromptView, log?: Logger): void {
  void showNotice('AIOS Device: confirmation needed', `${describeRequester(view)} asks to: ${view.function_name}`, log ?? silentLogger());
}
