/**
 * The window's screens (Home, Confirmations, Activity, Shares & devices, Functions, General, About) and
 * the navigation between them: one `<section class="screen" data-screen="…">` shown at a time, one nav
 * button per screen with `aria-current="page"` on the one shown. The nav's buttons are in the Tab order;
 * the arrow keys, Home and End move between them too. A screen chosen by the person gets the focus on its
 * heading, so a screen reader reads where it landed.
 */
import { $ } from './dom.js';

/** The screens, in the navigation's order. */
export const SCREENS = ['home', 'prompt', 'activity', 'shares', 'functions', 'general', 'about'] as const;
export type Screen = (typeof SCREENS)[number];

const state: { current: Screen; listeners: ((s: Screen) => void)[] } = { current: 'home', listeners: [] };

const navButtons = (): HTMLButtonElement[] => [...document.querySelectorAll<HTMLButtonElement>('#nav button[data-screen]')];
const sections = (): HTMLElement[] => [...document.querySelectorAll<HTMLElement>('main > section.screen')];

/** The screen shown. */
export const current = (): Screen => state.current;

/** Shows `screen`; with `focus`, moves the focus to its heading (a person chose it). */
export function show(screen: Screen, opts: { focus?: boolean } = {}): void {
  state.current = screen;
  for (const s of sections()) s.hidden = s.dataset['screen'] !== screen;
  for (const b of navButtons()) {
    if (b.dataset['screen'] === screen) b.setAttribute('aria-current', 'page');
    else b.removeAttribute('aria-current');
  }
  document.body.dataset['screen'] = screen;
  if (opts.focus) document.querySelector<HTMLElement>(`main > section.screen[data-screen="${screen}"] h2`)?.focus();
  for (const l of state.listeners) l(screen);
}

/** Calls `fn` each time another screen is shown. */
export function onShow(fn: (s: Screen) => void): void {
  state.listeners.push(fn);
}

/** Wires the navigation: a click shows its screen; arrows, Home and End move along the buttons. */
export function wire(): void {
  for (const b of navButtons()) b.addEventListener('click', () => show(b.dataset['screen'] as Screen, { focus: true }));
  $('nav').addEventListener('keydown', (e) => {
    const all = navButtons();
    const at = all.indexOf(document.activeElement as HTMLButtonElement);
    if (at < 0) return;
    const next = { ArrowDown: at + 1, ArrowRight: at + 1, ArrowUp: at - 1, ArrowLeft: at - 1, Home: 0, End: all.length - 1 }[e.key];
    if (next === undefined) return;
    e.preventDefault();
    all[(next + all.length) % all.length]?.focus();
  });
  show(state.current);
}
