/**
 * The prompt screen: the call waiting for the person (what, who asks, the risk, what it applies to, the
 * time left), its four answers and the remember options, its arguments on request, and how many wait
 * behind it. High and critical prompts have no default answer (Enter does nothing until the person has
 * moved to a button with Tab or used the pointer).
 */
import { has, t, tm } from './catalogue.js';
import { riskMessage, type WordsMessage } from '../../src/control/words.js';
import type { Answer, ParamsOf, PromptView } from './control-types.js';
import { $, input } from './dom.js';
import { formatCount, formatCountdown } from './format.js';
import { act, changed, control } from './page.js';
import * as screens from './screens.js';

/**
 * `shown`: the prompt on screen last; `answered`: the prompt this page answered last; `ended`: why the last
 * prompt went away when this page did not answer it (its time ran out, or it was answered elsewhere);
 * `back`: the screen to return to after answering, when a prompt brought the Confirmations screen up.
 */
const state: { prompts: PromptView[]; shownArgsFor?: string; armed?: string; shown?: PromptView; answered?: string; ended?: { key: string; p: PromptView }; back?: screens.Screen } = { prompts: [] };

/** Why the agent withdrew each prompt (control/notification.prompt_withdrawn), by prompt id. */
const withdrawnWhy = new Map<string, string>();

/** Notes why the agent withdrew a prompt (`answered`, `closed`, `timeout`, `cancelled`), before the list is read again. */
export function withdrawn(promptId: string, reason: string): void {
  withdrawnWhy.set(promptId, reason);
}

/** How many prompts wait for the person. */
export const waiting = (): number => state.prompts.length;

/** The level and what the risk flags mean, in the page's language (the agent's core catalogue). */
const riskText = (p: PromptView): string => tm(riskMessage(p, has));

/** The function's title in the page's language (the agent's words when it sent no key the catalogue has). */
const titleOf = (p: PromptView): string => (p.title_key && has(p.title_key) ? t(p.title_key) : p.function_name);

/**
 * What will happen, in the page's language: the agent sends the sentence as a key and params too; an
 * adapter's plain sentence is shown as written, marked as its own words.
 */
function sentenceOf(p: PromptView): string {
  if (p.sentence_own_words) return t('ui.prompt.own_words', { sentence: p.sentence });
  const m = p.sentence_message as WordsMessage | undefined;
  return m && has(m.key) ? tm(m) : p.sentence;
}

/** Who asks: the runtime the bridge attested first, what the runtime claims only as "says it is …". */
function requesterText(p: PromptView): string {
  const claimed = p.requester?.name ?? p.requester?.id;
  const runtime = p.runtime?.name;
  if (runtime) return claimed && claimed !== runtime ? t('ui.asker.attested_says', { runtime, claimed }) : runtime;
  return claimed ? t('ui.asker.unverified_says', { claimed }) : t('ui.asker.unverified');
}

const secondsLeft = (p: PromptView): number => Math.max(0, Math.ceil((Date.parse(p.expires_at) - Date.now()) / 1000));

function renderCountdown(): void {
  const p = state.prompts[0];
  if (p) $('prompt-countdown').textContent = formatCountdown(secondsLeft(p));
}

/** High and critical prompts have no default answer. */
const guarded = (p: PromptView): boolean => p.permission_level === 'high' || p.permission_level === 'critical';

const answerButtons = (): NodeListOf<HTMLButtonElement> => document.querySelectorAll<HTMLButtonElement>('#prompt [data-answer]');

/** Why the last prompt left the screen when nobody here answered it, or nothing. */
function renderEnded(): void {
  const e = state.ended;
  $('prompt-ended').hidden = !e;
  if (e) $('prompt-ended').textContent = t(e.key, { title: titleOf(e.p) });
}

/** The prompt that was on screen is gone: back where the person was if they answered it, else say why. */
function promptGone(p: PromptView): void {
  if (state.answered === p.prompt_id) {
    state.ended = undefined;
    if (state.back && screens.current() === 'prompt') screens.show(state.back);
  } else {
    // Its time ran out (the agent refuses it then), the caller cancelled it, or another window or the
    // terminal answered it: the agent's reason, else the clock.
    const why = withdrawnWhy.get(p.prompt_id) ?? (Date.parse(p.expires_at) <= Date.now() + 1500 ? 'timeout' : 'answered');
    state.ended = { key: why === 'timeout' ? 'ui.prompt.timed_out' : why === 'cancelled' ? 'ui.prompt.cancelled' : 'ui.prompt.gone', p };
  }
  withdrawnWhy.clear();
  state.back = undefined;
}

/** Renders the prompt on screen (or "nothing is waiting"), the nav's count and why the last one ended. */
export function render(): void {
  const p = state.prompts[0];
  const box = $('prompt');
  box.hidden = !p;
  $('no-prompt').hidden = !!p;
  const count = $('nav-prompt-count');
  count.hidden = !p;
  count.textContent = formatCount(state.prompts.length);
  if (!p && state.shown) promptGone(state.shown);
  state.shown = p;
  if (p) state.ended = undefined;
  renderEnded();
  changed();
  if (!p) {
    state.shownArgsFor = undefined;
    return;
  }
  // A new prompt takes the focus on itself (not on a button), so a key press meant for something else,
  // or for the previous prompt, answers nothing.
  const fresh = box.dataset['promptId'] !== p.prompt_id;
  box.dataset['promptId'] = p.prompt_id;
  box.dataset['level'] = p.permission_level;
  $('prompt-name').textContent = titleOf(p);
  $('prompt-sentence').textContent = sentenceOf(p);
  $('prompt-requester').textContent = requesterText(p);
  $('prompt-risk').textContent = riskText(p);
  $('prompt-risk').className = guarded(p) ? 'risk-high' : '';
  // The resources by the names people know them by (a grant's alias), else their ids.
  const shown = (p.resources ?? []).map((r) => r.label ?? r.id);
  $('prompt-resource').textContent = shown.length ? shown.join(', ') : t('ui.prompt.this_function');
  for (const el of document.querySelectorAll<HTMLElement>('#prompt .remember')) el.hidden = !p.rememberable;
  // "Any" widens a remembered answer past what the prompt shows: offered only when the agent says so, never preset.
  $('prompt-any-label').hidden = !p.remember_any;
  $('prompt-any-text').textContent = t(p.resources?.[0]?.kind === 'files' ? 'ui.prompt.any_folder' : 'ui.prompt.any_resource');
  if (box.dataset['anyFor'] !== p.prompt_id) {
    input('prompt-any').checked = false;
    box.dataset['anyFor'] = p.prompt_id;
  }
  for (const b of answerButtons()) b.disabled = false;
  if (state.shownArgsFor !== p.prompt_id) {
    $('prompt-args').hidden = true;
    $('prompt-args').textContent = '';
  }
  $('prompt-args-toggle').textContent = t($('prompt-args').hidden ? 'ui.prompt.view_args' : 'ui.prompt.hide_args');
  const more = state.prompts.length - 1;
  $('prompt-queue').hidden = more < 1;
  $('prompt-queue').textContent = t('ui.prompt.queue', { count: formatCount(more) });
  renderCountdown();
  if (fresh) {
    state.armed = undefined;
    // The prompt comes to the front: its screen, and the focus on it.
    if (screens.current() !== 'prompt') {
      state.back ??= screens.current();
      screens.show('prompt');
    }
    box.focus();
  }
}

/** Lists the prompts again: the one on screen first, the rest in their turn. */
export async function refresh(): Promise<void> {
  const r = await control.listPrompts();
  state.prompts = [...r.prompts].sort((a, b) => Number(b.active) - Number(a.active) || a.position - b.position);
  render();
}

/** Wires the answers, the arguments toggle, the Enter guard and the countdown. */
export function wire(): void {
  for (const b of answerButtons()) {
    b.addEventListener('click', () =>
      act(async () => {
        const p = state.prompts[0];
        if (!p) return;
        const answer = b.dataset['answer'] as Answer;
        const params: ParamsOf<'answerPrompt'> = { prompt_id: p.prompt_id, answer };
        if (answer.endsWith('_remember')) params.scope = input('prompt-always').checked ? 'always' : 'session';
        if (answer.endsWith('_remember') && p.remember_any && input('prompt-any').checked) params.resource_scope = 'any';
        for (const x of answerButtons()) x.disabled = true;
        state.answered = p.prompt_id;
        try {
          await control.answerPrompt(params);
        } finally {
          await refresh();
        }
      }),
    );
  }
  document.addEventListener(
    'keydown',
    (e) => {
      const p = state.prompts[0];
      if (!p || $('prompt').hidden) return;
      if (e.key === 'Tab') state.armed = p.prompt_id;
      else if (e.key === 'Enter' && guarded(p) && state.armed !== p.prompt_id && $('prompt').contains(e.target as Node)) {
        e.preventDefault();
        e.stopPropagation();
      }
    },
    true,
  );
  $('prompt').addEventListener('pointerdown', () => (state.armed = state.prompts[0]?.prompt_id));
  $('prompt-args-toggle').addEventListener('click', () =>
    act(async () => {
      const p = state.prompts[0];
      const pre = $('prompt-args');
      if (!p) return;
      if (!pre.hidden) {
        pre.hidden = true;
        $('prompt-args-toggle').textContent = t('ui.prompt.view_args');
        state.shownArgsFor = undefined;
        return;
      }
      const r = await control.promptArguments({ prompt_id: p.prompt_id });
      pre.textContent = JSON.stringify(r.arguments, null, 2);
      pre.hidden = false;
      state.shownArgsFor = p.prompt_id;
      $('prompt-args-toggle').textContent = t('ui.prompt.hide_args');
    }),
  );
  setInterval(renderCountdown, 1000);
}
