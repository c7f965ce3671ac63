/**
 * The `none` provider: nobody can be asked. Every call that needs a confirmation ends
 * `rejected/confirmation_unavailable` (the gate never queues a prompt for it).
 */
import type { PromptAnswer, PromptProvider } from '../prompt.js';

/** A provider that is never available. */
export class NonePromptProvider implements PromptProvider {
  readonly name = 'none' as const;
  available(): boolean {
    return false;
  }
  show(): Promise<PromptAnswer | 'closed'> {
    return Promise.reject(new Error('No confirmation prompt can be shown.'));
  }
}
