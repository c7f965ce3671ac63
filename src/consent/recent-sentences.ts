/**
 * The sentences the prompts of recent calls showed, for the activity list. In memory only: the audit
 * trail never stores them (they may quote argument values).
 */
import type { Message } from '../i18n/catalogue.js';

/** How many prompted calls keep their sentence. */
export const SENTENCES_KEPT = 500;

/** A prompt's sentence as the agent rendered it, and as a catalogue message when it is one. */
export interface PromptSentence {
  sentence: string;
  message?: Message;
}

/** The last SENTENCES_KEPT prompted calls' sentences, by call id. */
export class RecentSentences {
  private readonly byCall = new Map<string, PromptSentence>();

  /** Keeps the sentence of a call put to the user, forgetting the oldest beyond the bound. */
  remember(callId: string, sentence: PromptSentence): void {
    this.byCall.set(callId, sentence);
    if (this.byCall.size > SENTENCES_KEPT) this.byCall.delete(this.byCall.keys().next().value!);
  }

  /** The sentence the prompt of a call showed, while it is kept. */
  sentenceOf(callId: string): string | undefined {
    return this.byCall.get(callId)?.sentence;
  }

  /** The same sentence as a catalogue message (absent for an adapter's own words). */
  messageOf(callId: string): Message | undefined {
    return this.byCall.get(callId)?.message;
  }
}
