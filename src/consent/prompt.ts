/**
 * What a confirmation prompt shows and what the user can answer, shared by the queue and every
 * provider (terminal, UI, none).
 */
import type { AttestedRuntime, PermissionLevel, Risk } from '../protocol/messages.js';
import type { DecisionScope } from './decisions-store.js';
import type { Message } from '../i18n/catalogue.js';
import { ANSWERS, type Answer } from '../control/api.js';

/** The four answers a user can give (the control API's answers but `close`, which dismisses). */
export type PromptAnswerKind = Exclude<Answer, 'close'>;
/** The answer kinds, in the control API's order. */
export const ANSWER_KINDS: readonly PromptAnswerKind[] = ANSWERS.filter((a): a is PromptAnswerKind => a !== 'close');

/** A user's answer; `scope` applies to the remember answers (default `session`). */
export interface PromptAnswer {
  answer: PromptAnswerKind;
  scope?: DecisionScope;
  /**
   * What a remember answer covers: the resources the prompt showed (default), or `any` resource of
   * this function (only when the prompt offered it: `remember_any`).
   */
  resource_scope?: 'shown' | 'any';
}

/** A prompt as shown to the user (and broadcast to the UI). Carries no argument values. */
export interface PromptView {
  prompt_id: string;
  call_id: string;
  function_id: string;
  /** The function's plain-language name. */
  function_name: string;
  /** One sentence built from the validated arguments, in the agent's locale. */
  sentence: string;
  /** The function's title as a catalogue key (a built-in function's), for each surface to render in its language. */
  title_key?: string;
  /** The sentence as a catalogue message (key + params), for each surface to render in its language. */
  sentence_message?: Message;
  /** True when `sentence` is a third-party adapter's plain string: shown as written, marked as its own words. */
  sentence_own_words?: boolean;
  /** Who the runtime says it is: a claim, shown only as "says it is …". */
  requester: { kind: string; id?: string; name?: string } | null;
  /** The runtime the bridge attested (protocol 1.2 §6.1), named first; null on a 1.1 bridge (an unverified runtime). */
  runtime: AttestedRuntime | null;
  workspace_id: string;
  user_id: string;
  permission_level: PermissionLevel;
  risk: Risk | null;
  /** The resource set a remembered answer would be scoped to (`kind:id` lines), '*' when none. */
  resource: string;
  /** The resources the call touches, with the names people know them by (`label`: a grant's alias). */
  resources: { kind: string; id: string; label?: string }[];
  /** True when the user may remember the answer for any resource of this function ("any"). */
  remember_any: boolean;
  /** False for critical / always-confirm functions: only allow once and deny are offered. */
  rememberable: boolean;
  created_at: string;
  /** When the countdown runs out (ISO). */
  expires_at: string;
}

/** How a prompt ended. */
export type PromptResult =
  | { kind: 'answer'; answer: PromptAnswer }
  /** The user closed the prompt without answering: a deny that is never remembered. */
  | { kind: 'closed' }
  | { kind: 'timeout' }
  /** The call was cancelled while its prompt was waiting or showing. */
  | { kind: 'withdrawn' }
  /** No provider could show it. */
  | { kind: 'unavailable' };

/** Shows one prompt at a time; the queue guarantees it is never asked to show two at once. */
export interface PromptProvider {
  readonly name: 'ui' | 'tty' | 'none';
  /** True when this provider can show a prompt now (used by `auto`). */
  available(): boolean;
  /**
   * Shows the prompt and resolves with the user's answer or `closed`. When `signal` fires (timeout,
   * cancel) it must stop showing the prompt synchronously, in its abort listener.
   */
  show(view: PromptView, args: Record<string, unknown>, signal: AbortSignal): Promise<PromptAnswer | 'closed'>;
}
