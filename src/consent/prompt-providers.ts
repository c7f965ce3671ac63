/**
 * Which provider shows a prompt (`confirmations.provider`): the window (`ui`), the terminal (`tty`),
 * nobody (`none`), or `auto`, the window while one is attached, else the terminal when there is one.
 */
import type { PromptProvider } from './prompt.js';

/** `confirmations.provider`. */
export type ProviderChoice = 'auto' | 'ui' | 'tty' | 'none';

const CHOICES: readonly ProviderChoice[] = ['auto', 'ui', 'tty', 'none'];

/** The configured choice, checked; a value the config schema should have refused is an error that says so. */
export function providerChoice(v: string | undefined): ProviderChoice {
  const choice = v ?? 'auto';
  if (!(CHOICES as readonly string[]).includes(choice)) {
    throw new Error(`confirmations.provider: must be auto, ui, tty or none, not "${choice}".`);
  }
  return choice as ProviderChoice;
}

/** Picks, at the moment a prompt comes up, the provider that would show it (undefined: none can). */
export function providerPicker(choice: ProviderChoice, ui: PromptProvider, tty: PromptProvider): () => PromptProvider | undefined {
  return () => {
    switch (choice) {
      case 'ui': return ui;
      case 'tty': return tty;
      case 'none': return undefined;
      default:
        if (ui.available()) return ui;
        if (tty.available()) return tty;
        return undefined;
    }
  };
}
