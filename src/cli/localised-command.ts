/**
 * commander in the user's language. Each command passes its descriptions as catalogue strings
 * (`say('cli.help.…')`); this module covers the words commander writes itself: the help's titles and
 * "(default: …)" notes (through `configureHelp`), and its parse errors (a Command whose `error()` swaps
 * commander's English sentence for the catalogue's, chosen by the error's `code`, before commander prints
 * it, shows the help after it and exits with the same code). Written against commander 14 (lib/help.js,
 * lib/command.js); test/cli/cli-help-i18n.test.ts fails if an upgrade changes those words.
 */
import { Command, Help, type Argument, type ErrorOptions, type HelpConfiguration, type Option } from 'commander';
import { displayWidth } from './display-width.js';
import type { CliKey } from '../i18n/cli.js';
import { say } from './say.js';

/** The titles commander's formatHelp passes to `styleTitle`, and their catalogue keys. */
const TITLES: Readonly<Record<string, CliKey>> = {
  'Usage:': 'cli.help.word.usage',
  'Arguments:': 'cli.help.word.arguments',
  'Options:': 'cli.help.word.options',
  'Global Options:': 'cli.help.word.global_options',
  'Commands:': 'cli.help.word.commands',
};

/** A description with "(choices: …)" and "(default: …)" after it, as commander shows them, in the user's words. */
function withNotes(description: string, choices: readonly string[] | undefined, shownDefault: unknown, defaultText: string | undefined): string {
  let text = description;
  if (choices) text = say('cli.help.word.choices', { text, values: choices.map((c) => JSON.stringify(c)).join(', ') });
  if (shownDefault !== undefined) text = say('cli.help.word.default', { text, value: defaultText ?? JSON.stringify(shownDefault) });
  return text.trim();
}

const CJK_RUN = /[\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]+/u;
const TOKEN = /\s+|[\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]+|[^\s\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]+/gu;
/**
 * Punctuation that may not start a line (，。、；：！？）」』”’》〉…), and brackets that may not end one (（「『“‘《〈),
 * escaped: one character above U+00FF in a module makes V8 keep the whole bundled file's source as two-byte
 * text (2 × its size; scripts/build-agent-bundle.mjs refuses such a chunk).
 */
const CLOSING = /^[\uff0c\u3002\u3001\uff1b\uff1a\uff01\uff1f\uff09\u300d\u300f\u201d\u2019\u300b\u3009\u2026]+$/u;
const OPENING = /[\uff08\u300c\u300e\u201c\u2018\u300a\u3008]$/u;
/** Made on first use: a Segmenter loads ICU's break-iterator data (≈ 2.7 MB RSS; see display-width.ts). */
let words: Intl.Segmenter | undefined;

/**
 * The places a line may break: at spaces, and between Chinese words (found by Intl.Segmenter), never
 * before a closing mark or after an opening one. Returns pieces, a space piece being `{ space }`.
 */
function pieces(line: string): { text: string; space: boolean }[] {
  const out: { text: string; space: boolean }[] = [];
  const glue = (text: string): void => {
    const last = out.at(-1);
    if (last && !last.space && (CLOSING.test(text) || OPENING.test(last.text))) last.text += text;
    else out.push({ text, space: false });
  };
  for (const [token] of line.matchAll(TOKEN)) {
    if (/^\s/.test(token)) out.push({ text: token, space: true });
    else if (CJK_RUN.test(token[0]!)) for (const s of (words ??= new Intl.Segmenter('zh', { granularity: 'word' })).segment(token)) glue(s.segment);
    else glue(token);
  }
  return out;
}

/** Wraps `text` to `width` columns at the places `pieces` allows, keeping its own line breaks. */
export function wrap(text: string, width: number): string {
  return text
    .split(/\r?\n/)
    .map((line) => {
      const lines: string[] = [];
      let cur = '';
      let gap = '';
      for (const p of pieces(line)) {
        if (p.space) {
          gap = cur ? p.text : '';
          continue;
        }
        if (cur && displayWidth(cur + gap + p.text) > width) {
          lines.push(cur);
          cur = p.text;
        } else cur += gap + p.text;
        gap = '';
      }
      lines.push(cur);
      return lines.join('\n');
    })
    .join('\n');
}

/** commander's placeholders for "any options" and "a subcommand" in a usage, in the user's words. */
function placeholders(usage: string): string {
  return usage.replace('[options]', say('cli.help.word.usage_options')).replace('[command]', say('cli.help.word.usage_command'));
}

/** Help settings for every command: titles, notes and wrapping in the user's language. */
export function localisedHelp(): HelpConfiguration {
  return {
    styleTitle: (title: string) => {
      const key = TITLES[title];
      return key ? say(key) : title;
    },
    // commander's placeholders for "any options" and "a subcommand", in the user's words.
    commandUsage(this: Help, cmd: Command) {
      return placeholders(Help.prototype.commandUsage.call(this, cmd));
    },
    subcommandTerm(this: Help, cmd: Command) {
      return placeholders(Help.prototype.subcommandTerm.call(this, cmd));
    },
    // commander writes "<title> <usage>"; a title ending in a full-width colon carries its own spacing.
    formatHelp(this: Help, cmd: Command, helper: Help) {
      const text = Help.prototype.formatHelp.call(this, cmd, helper);
      const title = say('cli.help.word.usage');
      return title.endsWith('：') && text.startsWith(title + ' ') ? title + text.slice(title.length + 1) : text;
    },
    // Same rule as commander for when a default is worth showing: an option that takes a value, or a
    // boolean with a boolean default.
    optionDescription: (o: Option) =>
      withNotes(o.description, o.argChoices, o.defaultValue !== undefined && (o.required || o.optional || (o.isBoolean() && typeof o.defaultValue === 'boolean')) ? o.defaultValue : undefined, o.defaultValueDescription),
    argumentDescription: (a: Argument) => withNotes(a.description, a.argChoices, a.defaultValue, a.defaultValueDescription),
    // Terminal columns, not UTF-16 units: a Chinese character takes two, colour codes none.
    displayWidth,
    boxWrap(this: { minWidthToWrap: number }, str: string, width: number) {
      return width < this.minWidthToWrap ? str : wrap(str, width);
    },
  };
}

/** The `'…'`-quoted parts of one of commander's messages, in order. */
function quoted(message: string): string[] {
  return [...message.matchAll(/'([^']*)'/g)].map((m) => m[1]!);
}

/** commander's "(Did you mean …?)" line, in the user's words; '' when there is none. */
function suggestion(message: string): string {
  const m = /\n\(Did you mean (one of )?(.+)\?\)\s*$/.exec(message);
  if (!m) return '';
  return '\n' + say(m[1] ? 'cli.help.error.did_you_mean_one_of' : 'cli.help.error.did_you_mean', { candidates: m[2]! });
}

/**
 * commander's error `message` about `cmd`, in the user's language, by the error's `code`. The values
 * come from the command's own state where it holds them (its arguments, its options' flags); an error
 * this does not know keeps commander's message.
 */
export function localiseError(cmd: Command, message: string, code: string | undefined): string {
  const head = message.split('\n')[0]!;
  const option = cmd.options.find((o) => head.includes(`'${o.flags}'`))?.flags;
  switch (code) {
    case 'commander.unknownOption': {
      const flag = quoted(head)[0];
      return flag === undefined ? message : say('cli.help.error.unknown_option', { flag }) + suggestion(message);
    }
    case 'commander.unknownCommand': {
      const command = cmd.args[0];
      return command === undefined ? message : say('cli.help.error.unknown_command', { command }) + suggestion(message);
    }
    case 'commander.missingArgument': {
      const argument = cmd.registeredArguments.find((a, i) => a.required && cmd.args[i] == null)?.name();
      return argument === undefined ? message : say('cli.help.error.missing_argument', { argument });
    }
    case 'commander.optionMissingArgument':
      return option === undefined ? message : say('cli.help.error.option_missing_argument', { option });
    case 'commander.missingMandatoryOptionValue':
      return option === undefined ? message : say('cli.help.error.missing_mandatory_option', { option });
    case 'commander.excessArguments':
      return say('cli.help.error.excess_arguments', { command: cmd.name(), expected: cmd.registeredArguments.length, got: cmd.args.length });
    default:
      return message;
  }
}

/** A Command (and, through createCommand, every subcommand) whose parse errors are in the user's language. */
export class LocalisedCommand extends Command {
  override createCommand(name?: string): Command {
    return new LocalisedCommand(name);
  }

  override error(message: string, errorOptions?: ErrorOptions): never {
    return super.error(localiseError(this, message, errorOptions?.code), errorOptions);
  }
}
