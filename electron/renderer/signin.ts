/**
 * The sign-in screen (docs/login.md, "Signing in from the window"): the bridge address, the user code
 * large, the verification address, its QR code (a PNG data URL made by the agent), "Open browser", the
 * live state, and Sign out in the header. Calls control.signin.* and follows control/notification.signin.
 */
import { has, t } from './catalogue.js';
import type { RemoteError } from './control-client.js';
import type { SignInView } from './control-types.js';
import { $, input } from './dom.js';
import { formatTime } from './format.js';
import { act, changed, control } from './page.js';
import { setSignedIn } from './status.js';

/** The last view, or undefined while the agent offers no sign-in (a device provisioned by its config). */
let view: SignInView | undefined;
/** True after a sign-out the bridge could not be told about. */
let notRevoked = false;
const AGAIN = ['denied', 'expired', 'failed'];

function stateText(v: SignInView): string {
  if (v.state === 'failed') {
    const key = `ui.signin.error.${v.error?.code}`;
    return t(has(key) ? key : 'ui.signin.error.bridge_error');
  }
  if (v.state === 'not_signed_in' && notRevoked) return t('ui.signin.not_revoked');
  return t(`ui.signin.state.${v.state}`);
}

/** Renders the screen (and the header's account line) again. */
export function render(): void {
  const section = $('signin');
  const account = $('account');
  if (!view) {
    section.hidden = true;
    account.hidden = true;
    return;
  }
  const signedIn = view.state === 'signed_in';
  section.hidden = signedIn;
  account.hidden = !signedIn;
  section.dataset['state'] = view.state;
  if (signedIn) {
    $('signin-who').textContent = t('ui.signin.signed_in', { user: view.user_id ?? '', workspace: view.workspace_id ?? '', bridge: view.bridge_url ?? '' });
    return;
  }
  $('signin-state').textContent = stateText(view);
  $('signin-start').textContent = t(AGAIN.includes(view.state) ? 'ui.signin.start_again' : 'ui.signin.start');
  const bridge = input('signin-bridge');
  // Prefilled (from the config or the last attempt), unless the person is typing another one.
  if (view.bridge_url && !bridge.value && document.activeElement !== bridge) bridge.value = view.bridge_url;
  const waiting = view.state === 'waiting';
  // While a code waits, Cancel is the way back to the address (the code belongs to that bridge).
  $('signin-form').hidden = waiting;
  $('signin-code-box').hidden = !waiting;
  if (waiting) {
    const qr = $<HTMLImageElement>('signin-qr');
    $('signin-code').textContent = view.user_code ?? '';
    $('signin-uri').textContent = view.verification_uri ?? '';
    if (view.qr && qr.getAttribute('src') !== view.qr) qr.src = view.qr;
    qr.alt = t('ui.signin.qr_alt', { url: view.verification_uri_complete ?? '' });
    $('signin-expires').textContent = t('ui.signin.expires', { time: view.expires_at ? formatTime(view.expires_at) : '' });
  }
}

/** Shows `v` (an answer, or a control/notification.signin). */
export function update(v: SignInView | undefined): void {
  view = v;
  setSignedIn(v ? v.state === 'signed_in' : undefined);
  render();
  changed();
}

/** The sign-in's last state (undefined: the agent offers no sign-in, a device set up by its config). */
export const current = (): SignInView | undefined => view;

/** A sign-in call whose error is shown in the sign-in's own sentence for its type, when there is one. */
async function signinCall<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    const err = e as RemoteError;
    if (has(`ui.signin.error.${err.type}`)) throw Object.assign(new Error(err.message), { type: err.type, key: `ui.signin.error.${err.type}` });
    throw e;
  }
}

/** Asks the agent for the current state (after each (re)connect). */
export async function refresh(): Promise<void> {
  try {
    update(await control.signinStatus());
  } catch {
    // No sign-in methods (provisioned device) or no connection yet: nothing to show.
    update(undefined);
  }
}

/** Wires the form, Cancel, Open browser and Sign out; `openExternal` opens an address outside the page. */
export function wire(openExternal: (url: string) => void): void {
  $('signin-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void act(async () => {
      notRevoked = false;
      update(await signinCall(() => control.signinStart({ bridge_url: input('signin-bridge').value.trim() })));
      if (view?.state === 'waiting') $('signin-open').focus();
    });
  });
  $('signin-cancel').addEventListener('click', () => act(async () => update(await signinCall(() => control.signinCancel()))));
  $('signin-open').addEventListener('click', () => {
    if (view?.state === 'waiting' && view.verification_uri_complete) openExternal(view.verification_uri_complete);
  });
  $('signout').addEventListener('click', () =>
    act(async () => {
      const r = await signinCall(() => control.signout());
      notRevoked = r.revoked === false;
      update(r);
      input('signin-bridge').focus();
    }),
  );
}
