// The Settings part of the tray window / local web UI (see app.js for the page itself): shared folders
// and device grants (through control.grants.*, the kit's live grants, the admin config as the ceiling),
// functions on and off, start at login (Electron only), the log level, and About. app.js calls
// `window.aiosSettings.init(page)` once, `refresh()` when connected, `applyLocale()` on a language change.
// Everything the agent sends is shown with textContent; every sentence comes from the catalogues.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  /** What app.js hands over: t, has, act, call(method, params), and the Electron API when there is one. */
  let page;
  const data = { grants: undefined, functions: undefined, about: undefined, candidates: [], kinds: [], loginItem: undefined };

  const kindName = (kind) => (page.has(`ui.settings.kind.${kind}`) ? page.t(`ui.settings.kind.${kind}`) : kind);
  const accessName = (a) => page.t(a === 'read_write' ? 'ui.settings.read_write' : 'ui.settings.read');

  /** A list of elements in `ul`, or the "none" line when empty. */
  function fill(ul, items, row, noneId) {
    ul.replaceChildren(...items.map(row));
    if (noneId) $(noneId).hidden = items.length > 0;
  }

  // ------------------------------------------------------------ shared folders and devices
  function grantRow(g) {
    const li = document.createElement('li');
    li.dataset.kind = g.kind;
    li.dataset.id = g.id;
    li.dataset.source = g.source;
    const text = document.createElement('span');
    text.className = 'grow';
    const name = g.alias ? page.t('ui.settings.named', { alias: g.alias, id: g.id }) : g.id;
    const kind = kindName(g.kind);
    let line = g.access ? page.t('ui.settings.grant_access', { kind, name, access: accessName(g.access) }) : page.t('ui.settings.grant', { kind, name });
    // The admin's own entries: the user may remove them (narrowing), never widen them.
    if (g.source === 'config') line = page.t('ui.settings.from_admin', { grant: line });
    text.textContent = line;
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.textContent = page.t('ui.settings.remove');
    remove.setAttribute('aria-label', page.t('ui.settings.remove_named', { name: g.alias ?? g.id }));
    remove.addEventListener('click', () => page.act(async () => {
      await page.call('control.grants.remove', { kind: g.kind, id: g.id });
      await refreshGrants();
      $('device-kind').focus();
    }));
    li.append(text, remove);
    return li;
  }

  /** The admin's ceiling for a kind, as a sentence (undefined: the kind has none). */
  function ceilingText(kind) {
    const c = data.grants?.ceilings?.[kind];
    if (!c) return undefined;
    if (c.length === 0) return page.t('ui.settings.ceiling_closed', { kind: kindName(kind) });
    if (c.some((g) => g.id === '*')) return undefined;
    return page.t('ui.settings.ceiling', { kind: kindName(kind), list: c.map((g) => g.alias ?? g.id).join(page.t('ui.risk.separator')) });
  }

  function renderGrants() {
    if (!data.grants) return;
    fill($('grants'), Object.values(data.grants.grants).flat(), grantRow, 'no-grants');
    const notes = [...new Set(['files', $('device-kind').value].filter(Boolean))].map(ceilingText).filter(Boolean);
    $('grants-ceiling').hidden = notes.length === 0;
    $('grants-ceiling').textContent = notes.join(' ');
  }

  /** The device kinds a loaded handler declared and Settings can list (not `files`: that is the form above). */
  function renderKinds() {
    const select = $('device-kind');
    const chosen = select.value;
    const kinds = data.kinds;
    select.replaceChildren(
      ...kinds.map((k) => {
        const o = document.createElement('option');
        o.value = k;
        o.textContent = kindName(k);
        return o;
      }),
    );
    if (kinds.includes(chosen)) select.value = chosen;
    $('device-form').hidden = kinds.length === 0;
  }

  function renderCandidates() {
    const pick = $('device-pick');
    const none = document.createElement('option');
    none.value = '';
    none.textContent = page.t(data.candidates.length ? 'ui.settings.device.choose' : 'ui.settings.device.none_found');
    pick.replaceChildren(
      none,
      ...data.candidates.map((c) => {
        const o = document.createElement('option');
        o.value = c.id;
        const name = c.label ? page.t('ui.settings.device.labelled', { label: c.label, id: c.id }) : c.id;
        o.textContent = c.alias ? page.t('ui.settings.device.shared_as', { name, alias: c.alias }) : name;
        return o;
      }),
    );
    pick.disabled = data.candidates.length === 0;
  }

  async function refreshGrants() {
    data.grants = await page.call('control.grants.list');
    renderGrants();
  }

  // ------------------------------------------------------------ functions
  function riskLine(f) {
    const level = page.has(`ui.risk.${f.permission_level}`) ? page.t(`ui.risk.${f.permission_level}`) : f.permission_level;
    return page.t('ui.risk.level', { level });
  }

  function functionRow(f) {
    const li = document.createElement('li');
    li.dataset.functionId = f.id;
    const label = document.createElement('label');
    label.className = 'grow check';
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.checked = f.enabled;
    box.disabled = f.admin_disabled;
    const text = document.createElement('span');
    text.className = `risk-${f.permission_level}`;
    const params = { name: f.name, id: f.id, risk: riskLine(f) };
    text.textContent = page.t(f.admin_disabled ? 'ui.settings.functions.row_admin_off' : 'ui.settings.functions.row', params);
    label.append(box, text);
    box.addEventListener('change', () => page.act(async () => {
      try {
        const r = await page.call('control.functions.set', { id: f.id, enabled: box.checked });
        f.enabled = r.function.enabled;
      } finally {
        box.checked = f.enabled;
      }
    }));
    li.append(label);
    return li;
  }

  async function refreshFunctions() {
    data.functions = (await page.call('control.functions.list')).functions;
    fill($('functions'), data.functions, functionRow);
  }

  // ------------------------------------------------------------ general and about
  function renderGeneral() {
    const a = data.about;
    if (!a) return;
    const sel = $('log-level');
    sel.replaceChildren(
      ...a.log_levels.map((l) => {
        const o = document.createElement('option');
        o.value = l;
        o.textContent = page.has(`ui.settings.log.${l}`) ? page.t(`ui.settings.log.${l}`) : l;
        return o;
      }),
    );
    sel.value = a.log_level ?? 'info';
    $('about-version').textContent = a.version;
    $('about-protocol').textContent = a.protocol_version
      ? page.t('ui.settings.about.protocol_value', { negotiated: a.protocol_version, offered: a.protocol_offered })
      : page.t('ui.settings.about.protocol_none', { offered: a.protocol_offered });
    $('about-data-dir').textContent = a.data_dir;
    $('about-logs').textContent = a.log_file ?? page.t('ui.settings.about.logs_stderr');
    if (data.loginItem) {
      $('login-item-row').hidden = !data.loginItem.supported;
      $('login-item').checked = data.loginItem.enabled;
    }
  }

  async function refreshAbout() {
    data.about = await page.call('control.settings.get');
    data.kinds = Object.keys(data.about.grant_id_keys ?? {});
    renderKinds();
    if (page.shell) data.loginItem = await page.shellCall('getLoginItem');
    renderGeneral();
  }

  // ------------------------------------------------------------ wiring
  function wire() {
    const shell = page.shell;
    if (shell) {
      $('share-pick').hidden = false;
      $('open-logs').hidden = false;
      $('share-pick').addEventListener('click', () => page.act(async () => {
        const folder = await page.shellCall('pickFolder');
        if (folder) $('share-path').value = folder;
        $('share-path').focus();
      }));
      $('open-logs').addEventListener('click', () => page.act(() => page.shellCall('openLogs')));
      $('login-item').addEventListener('change', () => page.act(async () => {
        try {
          data.loginItem = await page.shellCall('setLoginItem', $('login-item').checked);
        } finally {
          renderGeneral();
        }
      }));
    }
    $('share-form').addEventListener('submit', (e) => {
      e.preventDefault();
      void page.act(async () => {
        const entry = { path: $('share-path').value.trim(), access: $('share-access').value };
        const alias = $('share-alias').value.trim();
        if (alias) entry.alias = alias;
        await page.call('control.grants.add', { kind: 'files', entry });
        $('share-path').value = '';
        $('share-alias').value = '';
        await refreshGrants();
      });
    });
    $('device-kind').addEventListener('change', () => {
      data.candidates = [];
      renderCandidates();
      renderGrants();
    });
    $('device-find').addEventListener('click', () => page.act(async () => {
      const kind = $('device-kind').value;
      const status = $('device-finding');
      status.hidden = false;
      status.textContent = page.t('ui.settings.device.finding');
      try {
        data.candidates = (await page.call('control.grants.candidates', { kind })).candidates;
      } finally {
        status.hidden = true;
        renderCandidates();
      }
      $(data.candidates.length ? 'device-pick' : 'device-id').focus();
    }));
    $('device-pick').addEventListener('change', () => {
      const c = data.candidates.find((x) => x.id === $('device-pick').value);
      if (!c) return;
      $('device-id').value = c.id;
      if (c.alias && !$('device-alias').value) $('device-alias').value = c.alias;
    });
    $('device-form').addEventListener('submit', (e) => {
      e.preventDefault();
      void page.act(async () => {
        const kind = $('device-kind').value;
        const id = $('device-id').value.trim();
        const alias = $('device-alias').value.trim();
        const key = data.about?.grant_id_keys?.[kind] ?? 'id';
        await page.call('control.grants.add', { kind, entry: alias ? { [key]: id, alias } : id });
        $('device-id').value = '';
        $('device-alias').value = '';
        await refreshGrants();
      });
    });
    $('log-level').addEventListener('change', () => page.act(async () => {
      try {
        const r = await page.call('control.settings.log_level', { level: $('log-level').value });
        data.about.log_level = r.log_level;
      } finally {
        renderGeneral();
      }
    }));
  }

  window.aiosSettings = {
    /** `p`: { t, has, act, call, shell?, shellCall? } from app.js. */
    init(p) {
      page = p;
      wire();
      renderCandidates();
    },
    /** The agent says the grants changed (in another window, or here): list them again. */
    async grantsChanged() {
      if (page) await refreshGrants();
    },
    /** Reads everything again (after connecting). */
    async refresh() {
      await Promise.all([refreshAbout(), refreshGrants(), refreshFunctions()]);
      $('settings').hidden = false;
    },
    /** Renders every string again in the page's new language. */
    applyLocale() {
      if (!page) return;
      renderKinds();
      renderCandidates();
      renderGrants();
      if (data.functions) fill($('functions'), data.functions, functionRow);
      renderGeneral();
    },
  };
})();
