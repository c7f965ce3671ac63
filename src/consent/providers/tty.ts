/**
 * The `tty` provider: an interactive prompt in the terminal the agent runs in (headless runs, QA boxes).
 * Single keys answer: a = allow once, r = allow & remember (then s = this session, f = forever),
 * d = deny, x = deny & remember, v = view the full arguments, q / Esc = close (deny, not remembered).
 * Raw mode is used only when the input is a TTY; otherwise keys are read as they arrive (e.g. a pipe).
 */
import type { Readable, Writable } from 'node:stream';
import type { PromptAnswer, PromptProvider, PromptView } from '../prompt.js';
import { describeRequester, describeRisk } from '../describe-risk.js';

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
  ) {}

  available(): boolean {
    return this.input.isTTY === true;
  }

  show(view: PromptView, args: Record<string, unknown>, signal: AbortSignal): Promise<PromptAnswer | 'closed'> {
    return new Promise((resolve) => {
      const out = (s: string): void => void this.output.write(s);
      const expires = Date.parse(view.expires_at);
      const secondsLeft = (): number => Math.max(0, Math.ceil((expires - Date.now()) / 1000));
      const wasRaw = this.input.isRaw === true;
      const useRaw = this.input.isTTY === true && typeof this.input.setRawMode === 'function';
      let step: 'main' | 'what' | 'scope' = 'main';
      // What a remembered answer covers: the resources shown, or (only when offered and chosen) any.
      let resourceScope: 'shown' | 'any' = 'shown';
      const shown = view.resources.map((r) => r.label ?? r.id).join(', ');

      const choices = (): string =>
        step === 'what'
          ? `Remember for [o] only ${shown} or [n] any resource of this function?  [Esc] back`
          : step === 'scope'
          ? 'Remember for [s] this session or [f] forever?  [Esc] back'
          : view.rememberable
            ? '[a] allow once  [r] allow & remember  [d] deny  [x] deny & remember  [v] view arguments  [q] close'
            : '[a] allow once  [d] deny  [v] view arguments  [q] close   (this function asks every time)';
      const tick = (): void => out(`\r\u001b[K  Time left: ${secondsLeft()} s `);

      const done = (r: PromptAnswer | 'closed', said: string): void => {
        cleanup();
        out(`\r\u001b[K  ${said}\n`);
        resolve(r);
      };
      const onKey = (chunk: Buffer | string): void => {
        for (const ch of chunk.toString('utf8')) {
          const k = ch.toLowerCase();
          if (k === CTRL_C) {
            done('closed', 'Closed: denied.');
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
            const what = resourceScope === 'any' ? ' for any resource' : '';
            if (k === 's') return done({ answer: 'allow_remember', scope: 'session', ...on }, `Allowed, remembered${what} for this session.`);
            if (k === 'f') return done({ answer: 'allow_remember', scope: 'always', ...on }, `Allowed, remembered${what} until you revoke it.`);
            if (k === ESC) { step = 'main'; out(`\r\u001b[K  ${choices()}\n`); tick(); }
            continue;
          }
          if (k === 'a') return done({ answer: 'allow_once' }, 'Allowed once.');
          if (k === 'd') return done({ answer: 'deny' }, 'Denied.');
          if (k === 'q' || k === ESC) return done('closed', 'Closed: denied.');
          if (k === 'x' && view.rememberable) return done({ answer: 'deny_remember', scope: 'always' }, 'Denied, remembered until you revoke it.');
          if (k === 'r' && view.rememberable) { step = view.remember_any ? 'what' : 'scope'; out(`\r\u001b[K  ${choices()}\n`); tick(); }
          if (k === 'v') {
            const json = JSON.stringify(args, null, 2).split('\n').map((l) => `    ${l}`).join('\n');
            out(`\r\u001b[K  Arguments:\n${json}\n  ${choices()}\n`);
            tick();
          }
        }
      };
      const onAbort = (): void => {
        cleanup();
        const why = signal.reason === 'timeout' ? 'Timed out: denied.' : 'Withdrawn: the call was cancelled.';
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
        `\n== AIOS Device: confirmation needed ==\n` +
          `  ${describeRequester(view)} in workspace ${view.workspace_id} asks to:\n` +
          `    ${view.function_name}\n` +
          `    ${view.sentence}\n` +
          (shown ? `  Applies to: ${shown}\n` : '') +
          `  Risk: ${describeRisk(view)}\n` +
          `  ${choices()}\n`,
      );
      tick();
      if (useRaw) this.input.setRawMode?.(true);
      this.input.on('data', onKey);
      this.input.resume();
    });
  }
}
