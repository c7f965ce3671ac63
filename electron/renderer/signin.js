// The sign-in part of the tray window / local web UI (docs/login.md, "Signing in from the window"):
// the bridge address, the user code large, the verification address, its QR code (a PNG data URL made by
// the agent), "Open browser", the live state, and Sign out in the header. app.js mounts it with what it
// needs (strings, the transport, error display); it calls control.signin.* and listens for
// control/notification.signin. Values from the agent are shown with textContent, never as HTML.
'use strict';
window.aiosSignin = {
  /**
   * @param ui {{ t(key: string, params?: object): string, has(key: string): boolean, call(method: string, params?: object): Promise<any>,
   *   act(fn: () => Promise<void>): Promise<void>, formatTime(iso: string): string, openExternal(url: string): void }}
   */
  mount(ui) {
    const $ = (id) => document.getElementById(id);
    /** The last SignInView, or undefined while the agent offers no sign-in (a device provisioned by its config). */
    let view;
    /** True after a sign-out the bridge could not be told about. */
    let notRevoked = false;
    const AGAIN = ['denied', 'expired', 'failed'];

    function stateText(v) {
      if (v.state === 'failed') {
        const key = `ui.signin.error.${v.error?.code}`;
        return ui.t(ui.has(key) ? key : 'ui.signin.error.bridge_error');
      }
      if (v.state === 'not_signed_in' && notRevoked) return ui.t('ui.signin.not_revoked');
      return ui.t(`ui.signin.state.${v.state}`);
    }

    function render() {
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
      section.dataset.state = view.state;
      if (signedIn) {
        $('signin-who').textContent = ui.t('ui.signin.signed_in', { user: view.user_id, workspace: view.workspace_id, bridge: view.bridge_url });
        return;
      }
      $('signin-state').textContent = stateText(view);
      $('signin-start').textContent = ui.t(AGAIN.includes(view.state) ? 'ui.signin.start_again' : 'ui.signin.start');
      const input = $('signin-bridge');
      // Prefilled (from the config or the last attempt), unless the person is typing another one.
      if (view.bridge_url && !input.value && document.activeElement !== input) input.value = view.bridge_url;
      const waiting = view.state === 'waiting';
      // While a code waits, Cancel is the way back to the address (the code belongs to that bridge).
      $('signin-form').hidden = waiting;
      $('signin-code-box').hidden = !waiting;
      if (waiting) {
        $('signin-code').textContent = view.user_code;
        $('signin-uri').textContent = view.verification_uri;
        if ($('signin-qr').getAttribute('src') !== view.qr) $('signin-qr').src = view.qr;
        $('signin-qr').alt = ui.t('ui.signin.qr_alt', { url: view.verification_uri_complete });
        $('signin-expires').textContent = ui.t('ui.signin.expires', { time: ui.formatTime(view.expires_at) });
      }
    }

    function update(v) {
      view = v;
      render();
    }

    /** An error answer shown in the page's language: the sign-in's own sentence for its type when there is one. */
    async function call(method, params) {
      try {
        return await ui.call(method, params);
      } catch (e) {
        if (ui.has(`ui.signin.error.${e.type}`)) throw Object.assign(new Error(e.message), { type: e.type, key: `ui.signin.error.${e.type}` });
        throw e;
      }
    }

    $('signin-form').addEventListener('submit', (e) => {
      e.preventDefault();
      void ui.act(async () => {
        notRevoked = false;
        update(await call('control.signin.start', { bridge_url: $('signin-bridge').value.trim() }));
        if (view.state === 'waiting') $('signin-open').focus();
      });
    });
    $('signin-cancel').addEventListener('click', () => ui.act(async () => update(await call('control.signin.cancel'))));
    $('signin-open').addEventListener('click', () => {
      if (view?.state === 'waiting') ui.openExternal(view.verification_uri_complete);
    });
    $('signout').addEventListener('click', () => ui.act(async () => {
      const r = await call('control.signout');
      notRevoked = r.revoked === false;
      update(r);
      $('signin-bridge').focus();
    }));

    return {
      /** Asks the agent for the current state (after each (re)connect). */
      async refresh() {
        try {
          update(await ui.call('control.signin.status'));
        } catch {
          // No sign-in methods (provisioned device) or no connection yet: nothing to show.
          update(undefined);
        }
      },
      /** A control/notification.signin from the agent. */
      update,
      /** Re-renders in the current language. */
      render,
    };
  },
};
