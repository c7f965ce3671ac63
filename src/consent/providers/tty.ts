/**
 * The `tty` provider: an interactive prompt in the terminal the agent runs in (headless runs, QA boxes).
 * Single keys answer: a = allow once, r = allow & remember (then s = this session, f = forever),
 * d = deny, x = deny & remember, v = view the full arguments, q / Esc = close (deny, not remembered).
 * Raw mode is used only when the input is a TTY; otherwise keys are read as they arrive (e.g. a pipe).
 */
import type { Readable, Writable } from 'node:stream';
import type { PromptAnswer, PromptProvider, PromptView } from '../prompt.js';
import { describeRequester, describeRisk, promptWords } from '../describe-risk.js';
import { coreMessage, localeFromEnv, strings, type CoreKey, type Locale } from '../../i18n/index.js';

/** A readable terminal (process.stdin or a tty.ReadStream). */
export type TtyInput = Readable & { isTTY?: boolean; isRaw?: boolean; setRawMode?: (raw: boolean) => unknown };

const CTRL_C = '\u0003';
const ESC = '\u001b';

/** Terminal prompt provider. */
export class TtyPromptProvider implements PromptProvider {
  readonly name = 'tty' as const;

  constructor(
    private readonly input: TtyInput = process.stdin,
    private readonly output: Writable = process.stdout,
    /** The language of the prompt: its own words, and the title and sentence the view carries as keys. */
    private readonly locale: Locale = localeFromEnv(),
  ) {}

  available(): boolean {
    return this.input.isTTY === true;
  }

  show(view: PromptView, args: Record<string, unknown>, signal: AbortSignal): Promise<PromptAnswer | 'closed'> {
    return new Promise((resolve) => {
      const out = (s: string): void => void this.output.write(s);
      const t = (key: CoreKey, params?: Record<string, string | number>): string => strings.render(coreMessage(key, params), this.locale);
      const expires = Date.parse(view.expires_at);
      const secondsLeft = (): number => Math.max(0, Math.ceil((expires - Date.now()) / 1000));
      const wasRaw = this.input.isRaw === true;
      const useRaw = this.input.isTTY === true && typeof this.input.setRawMode === 'function';
      let step: 'main' | 'what' | 'scope' = 'main';
      // What a remembered answer covers: the resources shown, or (only when offered and chosen) any.
      let resourceScope: 'shown' | 'any' = 'shown';
      const shown = view.resources.map((r) => r.label ?? r.id).join(', ');
      const words = promptWords(view, this.locale);

      const choices = (): string =>
        step === 'what'
          ? t('core.prompt.choices_what', { resources: shown })
          : step === 'scope'
          ? t('core.prompt.choices_scope')
          : view.rememberable
            ? t('core.prompt.choices')
            : t('core.prompt.choices_ask_always');
      const tick = (): void => out(`\r\u001b[K  ${t('core.prompt.time_left', { seconds: secondsLeft() })} `);

      const done = (r: PromptAnswer | 'closed', said: string): void => {
        cleanup();
        out(`\r\u001b[K  ${said}\n`);
        resolve(r);
      };
      const onKey = (chunk: Buffer | string): void => {
        for (const ch of chunk.toString('utf8')) {
          const k = ch.toLowerCase();
          if (k === CTRL_C) {
            done('closed', t('core.prompt.closed'));
            // Raw mode swallows Ctrl-C; pass it on so the agent still stops as the user expects.
            if (this.input === process.stdin) process.kill(process.pid, 'SIGINT');
            return;
          }
          if (step === 'what') {
            if (k === 'o' || k === 'n') {
              resourceScope = k === 'n' ? 'any' : 'shown';
              step = 'scope';
              out(`\r\u001b[K  ${choices()}\n`);
              tick();
            }
            if (k === ESC) { step = 'main'; out(`\r\u001b[K  ${choices()}\n`); tick(); }
            continue;
          }
          if (step === 'scope') {
            const on = resourceScope === 'any' ? { resource_scope: 'any' as const } : {};
            const any = resourceScope === 'any';
            if (k === 's') return done({ answer: 'allow_remember', scope: 'session', ...on }, t(any ? 'core.prompt.allowed_session_any' : 'core.prompt.allowed_session'));
            if (k === 'f') return done({ answer: 'allow_remember', scope: 'always', ...on }, t(any ? 'core.prompt.allowed_always_any' : 'core.prompt.allowed_always'));
            if (k === ESC) { step = 'main'; out(`\r\u001b[K  ${choices()}\n`); tick(); }
            continue;
          }
          if (k === 'a') return done({ answer: 'allow_once' }, t('core.prompt.allowed_once'));
          if (k === 'd') return done({ answer: 'deny' }, t('core.prompt.denied'));
          if (k === 'q' || k === ESC) return done('closed', t('core.prompt.closed'));
          if (k === 'x' && view.rememberable) return done({ answer: 'deny_remember', scope: 'always' }, t('core.prompt.denied_remembered'));
          if (k === 'r' && view.rememberable) { step = view.remember_any ? 'what' : 'scope'; out(`\r\u001b[K  ${choices()}\n`); tick(); }
          if (k === 'v') {
            const json = JSON.stringify(args, null, 2).split('\n').map((l) => `    ${l}`).join('\n');
            out(`\r\u001b[K  ${t('core.prompt.arguments')}\n${json}\n  ${choices()}\n`);
            tick();
          }
        }
      };
      const onAbort = (): void => {
        cleanup();
        const why = t(signal.reason === 'timeout' ? 'core.prompt.timed_out' : 'core.prompt.withdrawn');
        out(`\r\u001b[K  ${why}\n`);
        resolve('closed');
      };
      const timer = setInterval(tick, 1000);
      timer.unref();
      const cleanup = (): void => {
        clearInterval(timer);
        signal.removeEventListener('abort', onAbort);
        this.input.off('data', onKey);
        if (useRaw) this.input.setRawMode?.(wasRaw);
        this.input.pause();
      };

      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      out(
        `\n${t('core.prompt.title')}\n` +
          `  ${t('core.prompt.asks', { requester: describeRequester(view, this.locale), workspace: view.workspace_id })}\n` +
          `    ${words.title}\n` +
          `    ${words.sentence}\n` +
          (shown ? `  ${t('core.prompt.applies_to', { resources: shown })}\n` : '') +
          `  ${t('core.prompt.risk', { risk: describeRisk(view, this.locale) })}\n` +
          `  ${choices()}\n`,
      );
      tick();
      if (useRaw) this.input.setRawMode?.(true);
      this.input.on('data', onKey);
      this.input.resume();
    });
  }
}
