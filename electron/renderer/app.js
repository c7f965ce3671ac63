// The tray window / local web UI. One page for two hosts:
//  - in the Electron shell it talks to the agent through `window.aiosDevice` (electron/preload.ts);
//  - in a plain browser it is served by the agent's local endpoint at /ui/ and talks to `/health` and
//    `WS /rpc` on that same origin, with the local token from the URL fragment (#token=…) or typed in.
// It calls the control methods of src/consent/control-api.ts and listens for control/notification.*.
// Everything the agent sends is shown with textContent, never parsed as HTML.
// Every sentence of the page comes from the string catalogues next to it (en.json, zh-CN.json: the kit's
// flat `{ "ui.key": "text with {param}" }` format); what the agent sends (names, sentences, ids) is shown as
// is, in elements marked `data-value`. `?lang=pseudo` renders every catalogue string as ⟦…⟧ (a test mode).
'use strict';
(async () => {
  const TOKEN_KEY = 'aios-local-token';
  const LOCALE_KEY = window.aiosCatalogue.LOCALE_KEY;
  const $ = (id) => document.getElementById(id);

  // ---------------------------------------------------------------- strings (catalogue.js)
  const i18n = window.aiosCatalogue;
  const { loadLocale, pickLocale, t, has } = i18n;

  /** The Intl locale for dates and numbers (the pseudo-locale formats as English). */
  const intlLocale = () => (i18n.locale === 'zh-CN' ? 'zh-CN' : 'en');

  const formatTime = (iso) => new Intl.DateTimeFormat(intlLocale(), { dateStyle: 'short', timeStyle: 'medium' }).format(new Date(iso));
  const formatSeconds = (n) => new Intl.NumberFormat(intlLocale(), { style: 'unit', unit: 'second', unitDisplay: 'short' }).format(n);

  /** An error answer from the agent, with its wire type (revived from plain data, never instanceof). */
  const remoteError = (e) => Object.assign(new Error(e?.message ?? 'The agent refused.'), { type: e?.type ?? e?.data?.type ?? 'error' });

  // ---------------------------------------------------------------- transports
  /** Electron: the preload's typed functions, one per operation. */
  function ipcTransport(api) {
    const unwrap = async (p) => {
      const r = await p;
      if (r && r.ok) return r.value;
      throw remoteError(r?.error);
    };
    const byMethod = {
      'control.status': () => api.status(),
      'control.pause': () => api.pause(),
      'control.resume': () => api.resume(),
      'control.prompts.list': () => api.listPrompts(),
      'control.prompts.arguments': (p) => api.promptArguments(p.prompt_id),
      'control.prompts.answer': (p) => api.answerPrompt(p.prompt_id, p.answer, p.scope),
      'control.ui.focus': (p) => api.setFocused(p.focused),
      'control.decisions.list': () => api.listDecisions(),
      'control.decisions.revoke': (p) => api.revokeDecision(p.id),
      'control.activity.list': (p) => api.listActivity(p),
      'control.signin.status': () => api.signinStatus(),
      'control.signin.start': (p) => api.signinStart(p.bridge_url),
      'control.signin.cancel': () => api.signinCancel(),
      'control.signout': () => api.signout(),
      'control.grants.list': () => api.listGrants(),
      'control.grants.add': (p) => api.addGrant(p.kind, p.entry),
      'control.grants.remove': (p) => api.removeGrant(p.kind, p.id),
      'control.grants.candidates': (p) => api.grantCandidates(p.kind),
      'control.functions.list': () => api.listFunctions(),
      'control.functions.set': (p) => api.setFunction(p.id, p.enabled),
      'control.settings.get': () => api.getSettings(),
      'control.settings.log_level': (p) => api.setLogLevel(p.level),
    };
    return {
      needsToken: false,
      start(onEvent, onState) {
        api.onEvent((e) => onEvent(e.method, e.params));
        onState('connected');
      },
      call: (method, params = {}) => unwrap(byMethod[method](params)),
      health: () => unwrap(api.health()),
    };
  }

  /** Browser: JSON-RPC over `WS /rpc` on this page's origin; the token travels as a subprotocol. */
  function wsTransport(base, token) {
    const pending = new Map();
    let ws;
    let nextId = 1;
    let retryMs = 500;
    let everOpened = false;
    const t = {
      needsToken: true,
      start(onEvent, onState, onRefused) {
        const open = () => {
          onState('connecting');
          ws = new WebSocket(base.replace(/^http/, 'ws') + '/rpc', ['aios-local.v1', 'bearer.' + token]);
          let opened = false;
          ws.onopen = () => {
            opened = everOpened = true;
            retryMs = 500;
            onState('connected');
          };
          ws.onmessage = (m) => {
            let msg;
            try {
              msg = JSON.parse(m.data);
            } catch {
              return;
            }
            if (msg.id !== undefined && pending.has(msg.id)) {
              const p = pending.get(msg.id);
              pending.delete(msg.id);
              if (msg.error) p.reject(remoteError({ type: msg.error.data?.type, message: msg.error.message }));
              else p.resolve(msg.result);
            } else if (msg.method) onEvent(msg.method, msg.params);
          };
          ws.onclose = () => {
            for (const p of pending.values()) p.reject(remoteError({ type: 'disconnected', message: 'The connection to the agent was lost.' }));
            pending.clear();
            onState('disconnected');
            // Refused before it ever opened while the agent answers /health: the token is wrong.
            if (!opened && !everOpened) {
              t.health().then(() => onRefused(), () => setTimeout(open, retryMs));
              return;
            }
            setTimeout(open, retryMs);
            retryMs = Math.min(retryMs * 2, 30_000);
          };
        };
        open();
      },
      call(method, params = {}) {
        return new Promise((resolve, reject) => {
          if (!ws || ws.readyState !== WebSocket.OPEN) return reject(remoteError({ type: 'disconnected', message: 'Not connected to the agent.' }));
          const id = nextId++;
          pending.set(id, { resolve, reject });
          ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
        });
      },
      async health() {
        const res = await fetch(base + '/health', { cache: 'no-store', credentials: 'omit' });
        if (!res.ok) throw remoteError({ type: 'unavailable', message: `Health check answered ${res.status}.` });
        return res.json();
      },
    };
    return t;
  }

  /** The local token: from #token=… (then removed from the address bar), else from this tab's storage. */
  function takeToken() {
    const frag = new URLSearchParams(location.hash.slice(1));
    const fromHash = frag.get('token');
    if (fromHash) {
      sessionStorage.setItem(TOKEN_KEY, fromHash);
      history.replaceState(null, '', location.pathname + location.search);
      return fromHash;
    }
    return sessionStorage.getItem(TOKEN_KEY);
  }

  // ---------------------------------------------------------------- view
  const state = { transport: undefined, status: undefined, prompts: [], shownArgsFor: undefined, stopped: undefined };

  function showError(e) {
    const el = $('error');
    if (!e) {
      el.hidden = true;
      el.textContent = '';
      return;
    }
    el.hidden = false;
    // A wire `message` is English (PROTOCOL §2): the page shows its own sentence for the error's type.
    if (e.key) el.textContent = t(e.key);
    else if (e.type && has(`ui.error.${e.type}`)) el.textContent = t(`ui.error.${e.type}`);
    else if (e.type && has(`ui.settings.error.${e.type}`)) el.textContent = t(`ui.settings.error.${e.type}`);
    else el.textContent = t('ui.error.other', { type: e.type ?? 'error' });
    state.lastError = e;
  }

  const pills = {};
  /** A status pill: `labelKey` is the catalogue template (`Agent: {state}`), `value` the raw state. */
  function setPill(id, labelKey, value) {
    pills[id] = [labelKey, value];
    const el = $(id);
    el.dataset.state = value;
    const stateKey = `ui.state.${value}`;
    el.textContent = t(labelKey, { state: has(stateKey) ? t(stateKey) : t('ui.state.other', { state: value }) });
  }

  function riskText(p) {
    const flags = [];
    if (p.risk) {
      if (p.risk.destructive) flags.push(t('ui.risk.destructive'));
      if (p.risk.physical) flags.push(t('ui.risk.physical'));
      if (p.risk.read_only) flags.push(t('ui.risk.read_only'));
      if (!p.risk.idempotent) flags.push(t('ui.risk.not_idempotent'));
    }
    const level = has(`ui.risk.${p.permission_level}`) ? t(`ui.risk.${p.permission_level}`) : p.permission_level;
    return flags.length ? t('ui.risk.level_flags', { level, flags: flags.join(t('ui.risk.separator')) }) : t('ui.risk.level', { level });
  }

  function requesterText(r) {
    if (!r) return t('ui.requester.unknown');
    return [r.name, r.id && `(${r.id})`, r.kind && `· ${r.kind}`].filter(Boolean).join(' ');
  }

  function secondsLeft(p) {
    return Math.max(0, Math.ceil((Date.parse(p.expires_at) - Date.now()) / 1000));
  }

  /** The time left in the page's language: seconds under two minutes (what people count down), else minutes and seconds. */
  function formatCountdown(secs) {
    if (secs < 120) return formatSeconds(secs);
    const unit = (n, u) => new Intl.NumberFormat(intlLocale(), { style: 'unit', unit: u, unitDisplay: 'short' }).format(n);
    return new Intl.ListFormat(intlLocale(), { style: 'narrow', type: 'unit' }).format([unit(Math.floor(secs / 60), 'minute'), unit(secs % 60, 'second')]);
  }

  function renderCountdown() {
    const p = state.prompts[0];
    if (p) $('prompt-countdown').textContent = formatCountdown(secondsLeft(p));
  }

  /** High and critical prompts have no default answer: Enter does nothing until the user has moved to a button (Tab) or used the pointer. */
  const guarded = (p) => p.permission_level === 'high' || p.permission_level === 'critical';

  function renderPrompt() {
    const p = state.prompts[0];
    $('prompt').hidden = !p;
    $('no-prompt').hidden = !!p;
    if (!p) {
      state.shownArgsFor = undefined;
      return;
    }
    // A new prompt takes the focus on itself (not on a button), so a key press meant for something else,
    // or for the previous prompt, answers nothing.
    const fresh = $('prompt').dataset.promptId !== p.prompt_id;
    $('prompt').dataset.promptId = p.prompt_id;
    $('prompt').dataset.level = p.permission_level;
    $('prompt-name').textContent = p.function_name;
    $('prompt-sentence').textContent = p.sentence;
    $('prompt-requester').textContent = requesterText(p.requester);
    $('prompt-risk').textContent = riskText(p);
    $('prompt-risk').className = p.permission_level === 'high' || p.permission_level === 'critical' ? 'risk-high' : '';
    // The resources by the names people know them by (a grant's alias), else their ids.
    const shown = (p.resources ?? []).map((r) => r.label ?? r.id);
    $('prompt-resource').textContent = shown.length ? shown.join(', ') : t('ui.prompt.this_function');
    for (const el of document.querySelectorAll('#prompt .remember')) el.hidden = !p.rememberable;
    // "Any" widens a remembered answer past what the prompt shows: offered only when the agent says so, never preset.
    $('prompt-any-label').hidden = !p.remember_any;
    $('prompt-any-text').textContent = t(p.resources?.[0]?.kind === 'files' ? 'ui.prompt.any_folder' : 'ui.prompt.any_resource');
    if ($('prompt').dataset.anyFor !== p.prompt_id) {
      $('prompt-any').checked = false;
      $('prompt').dataset.anyFor = p.prompt_id;
    }
    for (const b of document.querySelectorAll('#prompt [data-answer]')) b.disabled = false;
    if (state.shownArgsFor !== p.prompt_id) {
      $('prompt-args').hidden = true;
      $('prompt-args').textContent = '';
    }
    $('prompt-args-toggle').textContent = t($('prompt-args').hidden ? 'ui.prompt.view_args' : 'ui.prompt.hide_args');
    const more = state.prompts.length - 1;
    $('prompt-queue').hidden = more < 1;
    $('prompt-queue').textContent = t('ui.prompt.queue', { count: new Intl.NumberFormat(intlLocale()).format(more) });
    renderCountdown();
    if (fresh) {
      state.promptArmed = undefined;
      $('prompt').focus();
    }
  }

  function renderStatus() {
    const s = state.status;
    const btn = $('pause');
    btn.disabled = !s;
    btn.textContent = t(s?.paused ? 'ui.resume' : 'ui.pause');
    if (s?.paused) setPill('bridge-state', 'ui.pill.calls', 'paused');
  }

  const lists = {};
  function renderList(listId, emptyId, items, row) {
    lists[listId] = [emptyId, items, row];
    const ul = $(listId);
    ul.replaceChildren(...items.map(row));
    $(emptyId).hidden = items.length > 0;
  }

  function decisionRow(d) {
    const li = document.createElement('li');
    const text = document.createElement('span');
    text.className = 'grow';
    text.textContent = t(d.effect === 'allow' ? 'ui.decisions.allow' : 'ui.decisions.deny', {
      function: d.function_id,
      resource: d.resource,
      scope: t(d.scope === 'always' ? 'ui.decisions.always' : 'ui.decisions.session'),
    });
    const revoke = document.createElement('button');
    revoke.type = 'button';
    revoke.textContent = t('ui.decisions.revoke');
    revoke.addEventListener('click', () => act(async () => {
      await state.transport.call('control.decisions.revoke', { id: d.id });
      await refreshDecisions();
    }));
    li.append(text, revoke);
    return li;
  }

  // ---------------------------------------------------------------- activity screen
  // Filters (function, state, requester, time range) go to control.activity.list; one call's details
  // open below the list; exports hold every call the filters match, as JSON and as CSV (RFC 4180).
  const ACTIVITY_PAGE = 100;
  /** The audit list's own cap (src/consent/audit-log.ts): an export asks for all of it. */
  const EXPORT_LIMIT = 10_000;
  const activity = { calls: [], selected: undefined, opener: undefined, exported: undefined };

  const callStateText = (s) => (has(`ui.activity.state.${s}`) ? t(`ui.activity.state.${s}`) : t('ui.state.other', { state: s }));
  const byText = (c) => c.requester_name || c.requester_id || c.requester_kind || t('ui.requester.unknown');

  /** A duration in the page's language: milliseconds under a second, else seconds (one decimal under a minute), else minutes and seconds. */
  function formatDuration(ms) {
    const unit = (n, u, digits = 0) => new Intl.NumberFormat(intlLocale(), { style: 'unit', unit: u, unitDisplay: 'short', maximumFractionDigits: digits }).format(n);
    if (ms < 1000) return unit(ms, 'millisecond');
    if (ms < 60_000) return unit(ms / 1000, 'second', 1);
    const m = Math.floor(ms / 60_000);
    const s = Math.round((ms % 60_000) / 1000);
    return new Intl.ListFormat(intlLocale(), { style: 'narrow', type: 'unit' }).format([unit(m, 'minute'), unit(s, 'second')]);
  }

  /** A size in bytes in the page's language (B, kB, MB: decimal units, as file managers show them). */
  function formatSize(bytes) {
    const [n, u] = bytes < 1000 ? [bytes, 'byte'] : bytes < 1e6 ? [bytes / 1e3, 'kilobyte'] : [bytes / 1e6, 'megabyte'];
    return new Intl.NumberFormat(intlLocale(), { style: 'unit', unit: u, unitDisplay: 'short', maximumFractionDigits: 1 }).format(n);
  }

  /** The filters as control.activity.list takes them (empty fields left out; local times → ISO). */
  function activityFilter() {
    const f = {};
    const fn = $('activity-function').value.trim();
    const st = $('activity-state').value;
    const who = $('activity-requester').value.trim();
    if (fn) f.function = fn;
    if (st) f.state = st;
    if (who) f.requester = who;
    for (const [id, key] of [['activity-from', 'since'], ['activity-to', 'until']]) {
      const v = $(id).value;
      if (v && !Number.isNaN(new Date(v).getTime())) f[key] = new Date(v).toISOString();
    }
    return f;
  }

  function activityRow(c) {
    const li = document.createElement('li');
    li.dataset.callId = c.call_id;
    li.dataset.state = c.state;
    li.dataset.function = c.function_id;
    const text = document.createElement('span');
    text.className = 'grow';
    text.id = `activity-row-${c.call_id}`;
    const on = (c.resources ?? []).map((r) => r.label).join(', ');
    // The sentence the prompt showed, when the call was put to the user; else the function and resources.
    const what = c.sentence || (on ? t('ui.activity.on', { function: c.function_id, resources: on }) : c.function_id);
    const by = byText(c);
    const callState = callStateText(c.state);
    text.textContent = c.error_type ? t('ui.activity.row_error', { what, state: callState, error: c.error_type, by }) : t('ui.activity.row', { what, state: callState, by });
    const time = document.createElement('time');
    time.className = 'muted';
    time.dataset.value = '';
    if (c.finished_at) {
      time.dateTime = c.finished_at;
      time.textContent = formatTime(c.finished_at);
    }
    const more = document.createElement('button');
    more.type = 'button';
    more.className = 'link';
    more.textContent = t('ui.activity.details.open');
    more.setAttribute('aria-describedby', text.id);
    more.setAttribute('aria-expanded', String(activity.selected === c.call_id));
    more.addEventListener('click', () => openDetails(c.call_id, more));
    li.append(text, time, more);
    return li;
  }

  function renderDetails() {
    const c = activity.calls.find((x) => x.call_id === activity.selected);
    $('activity-details').hidden = !c;
    if (!c) return;
    const put = (id, text) => ($(id).textContent = text);
    const dash = t('ui.activity.details.none');
    put('ad-sentence', c.sentence ?? '');
    $('ad-sentence').hidden = !c.sentence;
    put('ad-function', c.function_id);
    put('ad-state', callStateText(c.state));
    if (c.decision) {
      const decision = has(`ui.activity.decision.${c.decision}`) ? t(`ui.activity.decision.${c.decision}`) : c.decision;
      const who = c.decided_by && has(`ui.activity.decided_by.${c.decided_by}`) ? t(`ui.activity.decided_by.${c.decided_by}`) : (c.decided_by ?? '');
      put('ad-decision', t(c.remembered ? 'ui.activity.details.decision_remembered' : 'ui.activity.details.decision_by', { decision, by: who }));
    } else put('ad-decision', dash);
    put('ad-requester', [c.requester_name, c.requester_id && `(${c.requester_id})`, c.requester_kind && `· ${c.requester_kind}`].filter(Boolean).join(' ') || dash);
    put('ad-resources', (c.resources ?? []).map((r) => `${r.kind}: ${r.label}`).join(', ') || dash);
    put('ad-accepted', c.accepted_at ? formatTime(c.accepted_at) : dash);
    put('ad-finished', c.finished_at ? formatTime(c.finished_at) : dash);
    // A call that never ran has no run time: its time from acceptance to the end is what the user waited on.
    const waited = c.accepted_at && c.finished_at ? Date.parse(c.finished_at) - Date.parse(c.accepted_at) : NaN;
    if (typeof c.duration_ms === 'number') put('ad-duration', formatDuration(c.duration_ms));
    else if (waited >= 0) put('ad-duration', t('ui.activity.details.not_run', { time: formatDuration(waited) }));
    else put('ad-duration', dash);
    // The wire message is English and not kept (PROTOCOL §2): the page explains the error by its type.
    if (c.error_type) {
      const why = has(`ui.activity.error.${c.error_type}`) ? t(`ui.activity.error.${c.error_type}`) : t('ui.activity.error.other');
      put('ad-error', t('ui.activity.details.error_value', { message: why, type: c.error_type }));
    } else put('ad-error', dash);
    put('ad-args', c.args_summary === null || c.args_summary === undefined ? '' : JSON.stringify(c.args_summary, null, 2));
    put('ad-call-id', c.call_id);
  }

  function openDetails(callId, opener) {
    activity.selected = callId;
    activity.opener = callId;
    for (const b of document.querySelectorAll('#activity li button')) b.setAttribute('aria-expanded', 'false');
    opener?.setAttribute('aria-expanded', 'true');
    renderDetails();
    $('activity-details').focus();
  }

  function closeDetails() {
    const back = [...document.querySelectorAll('#activity li')].find((li) => li.dataset.callId === activity.opener)?.querySelector('button');
    activity.selected = undefined;
    renderDetails();
    for (const b of document.querySelectorAll('#activity li button')) b.setAttribute('aria-expanded', 'false');
    if (back) back.focus();
  }

  function renderActivityCount() {
    const n = activity.calls.length;
    const filtered = Object.keys(activityFilter()).length > 0;
    $('activity-count').textContent = n === 0 ? '' : t(filtered ? 'ui.activity.count_filtered' : 'ui.activity.count', { count: new Intl.NumberFormat(intlLocale()).format(n) });
    $('no-activity').textContent = t(filtered ? 'ui.activity.none_match' : 'ui.activity.none');
  }

  function fillSuggestions(calls) {
    const options = (values) => [...new Set(values.filter(Boolean))].sort().map((v) => Object.assign(document.createElement('option'), { value: v }));
    $('activity-functions').replaceChildren(...options(calls.map((c) => c.function_id)));
    $('activity-requesters').replaceChildren(...options(calls.flatMap((c) => [c.requester_name, c.requester_id])));
  }

  async function refreshActivity() {
    const r = await state.transport.call('control.activity.list', { ...activityFilter(), limit: ACTIVITY_PAGE });
    activity.calls = r.calls;
    if (activity.selected && !r.calls.some((c) => c.call_id === activity.selected)) activity.selected = undefined;
    renderList('activity', 'no-activity', r.calls, activityRow);
    renderActivityCount();
    renderDetails();
    // Suggestions come from everything recent, not only what the filters let through.
    const all = Object.keys(activityFilter()).length ? (await state.transport.call('control.activity.list', { limit: 500 })).calls : r.calls;
    fillSuggestions(all);
    // For tests and scripts: how many refreshes have finished (a submit's answer is the next one).
    $('activity').dataset.refreshes = String(Number($('activity').dataset.refreshes ?? 0) + 1);
  }

  /** The CSV columns, in order: the audit row's fields, the prompt's sentence, and the nested ones as JSON text. */
  const CSV_COLUMNS = ['call_id', 'function_id', 'state', 'error_type', 'decision', 'decided_by', 'remembered', 'requester_kind', 'requester_id', 'requester_name', 'workspace_id', 'user_id', 'sentence', 'resources', 'args_summary', 'accepted_at', 'finished_at', 'duration_ms'];

  /**
   * One CSV cell (RFC 4180): quoted when it holds a comma, a quote, CR or LF (quotes doubled). A text
   * that a spreadsheet would run as a formula (= + - @ tab CR first) gets a leading apostrophe (OWASP's
   * CSV-injection advice); numbers and booleans are written as they are, null as an empty cell.
   */
  function csvCell(v) {
    if (v === null || v === undefined) return '';
    let s = typeof v === 'object' ? JSON.stringify(v) : String(v);
    if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  }

  /** The calls as CSV: a header row, CRLF line ends, and a byte-order mark so spreadsheets read UTF-8 (Chinese). */
  function toCsv(calls) {
    const rows = [CSV_COLUMNS, ...calls.map((c) => CSV_COLUMNS.map((k) => c[k]))];
    return '\uFEFF' + rows.map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
  }

  async function exportActivity(format) {
    const r = await state.transport.call('control.activity.list', { ...activityFilter(), limit: EXPORT_LIMIT });
    const body = format === 'csv' ? toCsv(r.calls) : JSON.stringify(r.calls, null, 2) + '\n';
    const blob = new window.Blob([body], { type: format === 'csv' ? 'text/csv;charset=utf-8' : 'application/json' });
    const stamp = new Date().toISOString().replace(/[:.]/g, '-').replace(/-\d+Z$/, 'Z');
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `aios-activity-${stamp}.${format}`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
    activity.exported = { count: r.calls.length, format, size: blob.size };
    renderExported();
  }

  function renderExported() {
    const e = activity.exported;
    $('activity-exported').hidden = !e;
    if (e) $('activity-exported').textContent = t('ui.activity.export.done', { count: new Intl.NumberFormat(intlLocale()).format(e.count), format: e.format.toUpperCase(), size: formatSize(e.size) });
  }

  function wireActivity() {
    $('activity-filters').addEventListener('submit', (e) => {
      e.preventDefault();
      void act(refreshActivity);
    });
    $('activity-state').addEventListener('change', () => act(refreshActivity));
    $('activity-clear').addEventListener('click', () => {
      $('activity-filters').reset();
      void act(refreshActivity);
    });
    $('activity-export-json').addEventListener('click', () => act(() => exportActivity('json')));
    $('activity-export-csv').addEventListener('click', () => act(() => exportActivity('csv')));
    $('activity-details-close').addEventListener('click', closeDetails);
    $('activity-details').addEventListener('keydown', (e) => {
      if (e.key === 'Escape') closeDetails();
    });
  }

  // ---------------------------------------------------------------- data
  async function refreshPrompts() {
    const r = await state.transport.call('control.prompts.list');
    // The prompt on screen first; the rest wait their turn.
    state.prompts = [...r.prompts].sort((a, b) => Number(b.active) - Number(a.active) || a.position - b.position);
    renderPrompt();
  }
  async function refreshDecisions() {
    const r = await state.transport.call('control.decisions.list');
    renderList('decisions', 'no-decisions', r.decisions, decisionRow);
  }
  async function refreshStatus() {
    state.status = await state.transport.call('control.status');
    renderStatus();
  }
  async function refreshHealth() {
    try {
      const h = await state.transport.health();
      if (!state.status?.paused) setPill('bridge-state', 'ui.pill.bridge', h.bridge);
      state.stopped = h.stopped;
      renderStopped();
    } catch {
      setPill('bridge-state', 'ui.pill.bridge', 'unknown');
    }
  }

  /** The window's own words for the agent's advice: `core.stop.X` (console, `aios-device login`) → `ui.stop.X` (this window's Sign in). */
  const windowActionKey = (a) => (typeof a.action_key === 'string' && a.action_key.startsWith('core.stop.') ? 'ui.stop.' + a.action_key.slice('core.stop.'.length) : undefined);

  /** Why the bridge session stopped for good and what to do (`/health` → `stopped`), or nothing while it runs. */
  function renderStopped() {
    const a = state.stopped;
    const box = $('stopped');
    box.hidden = !a;
    if (!a) {
      delete box.dataset.type;
      return;
    }
    box.dataset.type = a.type;
    const title = `ui.stop.title.${a.type}`;
    $('stopped-title').textContent = has(title) ? t(title) : t('ui.stop.title.other', { type: a.type });
    const key = windowActionKey(a);
    const action = $('stopped-action');
    if (key && has(key)) {
      action.textContent = t(key);
      delete action.dataset.value;
    } else {
      // A stop this page has no sentence for (a newer agent): the agent's own English advice, as agent data.
      action.textContent = a.action ?? '';
      action.dataset.value = '';
    }
  }
  // Settings (settings.js): shared folders and devices, functions, general, About.
  const settings = window.aiosSettings;
  const refreshAll = () => Promise.all([refreshStatus(), refreshPrompts(), refreshDecisions(), refreshActivity(), refreshHealth(), settings.refresh(), signin?.refresh()]);

  /** Runs a user action; its error is shown instead of thrown. */
  async function act(fn) {
    try {
      showError(undefined);
      await fn();
    } catch (e) {
      showError(e);
    }
  }

  function onEvent(method, params) {
    switch (method) {
      case 'control/notification.prompt':
      case 'control/notification.prompt_withdrawn':
        void act(async () => {
          await refreshPrompts();
          if (method.endsWith('withdrawn')) await Promise.all([refreshActivity(), refreshDecisions()]);
        });
        break;
      case 'control/notification.status':
        state.status = params;
        renderStatus();
        if (!params.paused) void refreshHealth();
        break;
      case 'control/notification.signin':
        signin?.update(params);
        // A revoked sign-in shows here first; /health says why the session stopped.
        void refreshHealth();
        break;
      case 'control/notification.grants':
        void act(() => settings.grantsChanged());
        break;
      // The bridge session's state changed (the tray's IPC in Electron, the local endpoint in a browser):
      // the pill at once, and /health for whether it stopped for good (and why) or runs again.
      case 'tray/notification.bridge':
      case 'control/notification.bridge':
        if (!state.status?.paused) setPill('bridge-state', 'ui.pill.bridge', params.bridge);
        void refreshHealth();
        break;
    }
  }

  // ---------------------------------------------------------------- wiring
  function wireControls() {
    $('pause').addEventListener('click', () => act(async () => {
      state.status = await state.transport.call(state.status?.paused ? 'control.resume' : 'control.pause');
      renderStatus();
      if (!state.status.paused) await refreshHealth();
    }));
    for (const b of document.querySelectorAll('#prompt [data-answer]')) {
      b.addEventListener('click', () => act(async () => {
        const p = state.prompts[0];
        if (!p) return;
        const answer = b.dataset.answer;
        const params = { prompt_id: p.prompt_id, answer };
        if (answer.endsWith('_remember')) params.scope = $('prompt-always').checked ? 'always' : 'session';
        if (answer.endsWith('_remember') && p.remember_any && $('prompt-any').checked) params.resource_scope = 'any';
        for (const x of document.querySelectorAll('#prompt [data-answer]')) x.disabled = true;
        try {
          await state.transport.call('control.prompts.answer', params);
        } finally {
          await refreshPrompts();
        }
      }));
    }
    document.addEventListener('keydown', (e) => {
      const p = state.prompts[0];
      if (!p || $('prompt').hidden) return;
      if (e.key === 'Tab') state.promptArmed = p.prompt_id;
      else if (e.key === 'Enter' && guarded(p) && state.promptArmed !== p.prompt_id && $('prompt').contains(e.target)) {
        e.preventDefault();
        e.stopPropagation();
      }
    }, true);
    $('prompt').addEventListener('pointerdown', () => (state.promptArmed = state.prompts[0]?.prompt_id));
    $('prompt-args-toggle').addEventListener('click', () => act(async () => {
      const p = state.prompts[0];
      const pre = $('prompt-args');
      if (!p) return;
      if (!pre.hidden) {
        pre.hidden = true;
        $('prompt-args-toggle').textContent = t('ui.prompt.view_args');
        state.shownArgsFor = undefined;
        return;
      }
      const r = await state.transport.call('control.prompts.arguments', { prompt_id: p.prompt_id });
      pre.textContent = JSON.stringify(r.arguments, null, 2);
      pre.hidden = false;
      state.shownArgsFor = p.prompt_id;
      $('prompt-args-toggle').textContent = t('ui.prompt.hide_args');
    }));
    // The agent skips the desktop notification while this page is in front.
    const focus = () => state.transport && void state.transport.call('control.ui.focus', { focused: document.visibilityState === 'visible' && document.hasFocus() }).catch(() => undefined);
    window.addEventListener('focus', focus);
    window.addEventListener('blur', focus);
    document.addEventListener('visibilitychange', focus);
    setInterval(renderCountdown, 1000);
    setInterval(() => state.transport && void refreshHealth(), 10_000);
  }

  /**
   * In a browser this page is the one who answers prompts while it is open: it attaches and sends a
   * heartbeat; when the tab closes or hangs the agent stops sending it prompts within seconds. (In the
   * Electron window the tray's main process is the answerer.)
   */
  const answerer = { id: undefined, timer: undefined };
  async function attachAnswerer() {
    const r = await state.transport.call('control.prompts.attach', { name: 'web page' });
    answerer.id = r.answerer_id;
    clearInterval(answerer.timer);
    answerer.timer = setInterval(() => {
      state.transport.call('control.prompts.heartbeat', { answerer_id: answerer.id }).then(
        (h) => { if (!h.ok) void attachAnswerer().catch(() => undefined); },
        () => undefined,
      );
    }, r.heartbeat_ms);
  }
  function stopAnswerer() {
    clearInterval(answerer.timer);
    answerer.timer = undefined;
    answerer.id = undefined;
  }

  function connect(transport) {
    state.transport = transport;
    transport.start(
      onEvent,
      (s) => {
        setPill('agent-state', 'ui.pill.agent', s);
        if (s === 'connected') {
          if (transport.needsToken) void act(attachAnswerer);
          void act(refreshAll);
        } else stopAnswerer();
      },
      () => {
        sessionStorage.removeItem(TOKEN_KEY);
        askForToken({ key: 'ui.token.refused' });
      },
    );
  }

  function askForToken(message) {
    setPill('agent-state', 'ui.pill.agent', 'disconnected');
    if (message) showError(message);
    const form = $('token-form');
    form.hidden = false;
    form.onsubmit = (e) => {
      e.preventDefault();
      const token = $('token-input').value.trim();
      if (!token) return;
      sessionStorage.setItem(TOKEN_KEY, token);
      form.hidden = true;
      showError(undefined);
      connect(wsTransport(location.origin, token));
    };
  }

  /** Puts every string of the page in the current locale (static ones from data-i18n, the rest re-rendered). */
  function applyLocale() {
    document.documentElement.lang = intlLocale();
    for (const el of document.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
    if (i18n.locale !== 'pseudo') $('lang').value = i18n.locale;
    for (const [id, [labelKey, value]] of Object.entries(pills)) setPill(id, labelKey, value);
    for (const [listId, [emptyId, items, row]] of Object.entries(lists)) renderList(listId, emptyId, items, row);
    if (state.lastError && !$('error').hidden) showError(state.lastError);
    renderStatus();
    renderPrompt();
    renderActivityCount();
    renderDetails();
    renderExported();
    renderStopped();
    signin?.render();
    settings.applyLocale();
  }

  $('lang').addEventListener('change', () => act(async () => {
    const locale = $('lang').value;
    localStorage.setItem(LOCALE_KEY, locale);
    await loadLocale(locale);
    applyLocale();
  }));

  await loadLocale(pickLocale());
  // The sign-in screen (signin.js); "Open browser" goes through the shell in Electron, where window.open is denied.
  const signin = window.aiosSignin?.mount({
    t,
    has,
    act,
    formatTime,
    call: (method, params) => state.transport.call(method, params),
    openExternal: (url) => (window.aiosDevice ? void window.aiosDevice.openExternal(url) : void window.open(url, '_blank', 'noopener,noreferrer')),
  });
  setPill('agent-state', 'ui.pill.agent', 'connecting');
  setPill('bridge-state', 'ui.pill.bridge', 'unknown');
  applyLocale();
  wireControls();
  wireActivity();
  settings.init({
    t,
    has,
    act,
    call: (method, params) => state.transport.call(method, params),
    // Electron only: the shell's own operations (folder picker, start at login, open logs).
    ...(window.aiosDevice
      ? {
          shell: window.aiosDevice,
          shellCall: async (op, ...args) => {
            const r = await window.aiosDevice[op](...args);
            if (r && r.ok) return r.value;
            throw remoteError(r?.error);
          },
        }
      : {}),
  });
  if (window.aiosDevice) connect(ipcTransport(window.aiosDevice));
  else {
    const token = takeToken();
    if (token) connect(wsTransport(location.origin, token));
    else askForToken();
  }
})();
