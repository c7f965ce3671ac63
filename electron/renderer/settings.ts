/**
 * The settings screens: Shares & devices (control.grants.*: the live grants, with the admin config as
 * the ceiling), Functions (grouped by handler, searchable, on and off), General (the language switch is
 * app.ts's; start at login in Electron only, the log level) and About. Everything the agent sends is shown with textContent; every sentence comes from the catalogues.
 */
import type { DeviceApi } from '../ipc-channels.js';
import { countKey, has, t, tm, tNodes } from './catalogue.js';
import { riskMessage } from '../../src/control/words.js';
import type { Candidate, FunctionView, GrantView, LogLevel, ResultOf, SettingsView } from './control-types.js';
import { $, input, select } from './dom.js';
import { formatCount } from './format.js';
import { act, changed, control } from './page.js';
import { unwrap } from './transports.js';

/** The shell's own operations (Electron only): the folder picker, start at login, open logs. */
type Shell = Pick<DeviceApi, 'pickFolder' | 'getLoginItem' | 'setLoginItem' | 'openLogs'>;
let shell: Shell | undefined;
const data: {
  grants?: ResultOf<'listGrants'>;
  functions?: FunctionView[];
  /** Local adapters waiting for approval, and those running without the sandbox (control.status). */
  adapters?: { pending: string[]; unsandboxed: string[] } | undefined;
  about?: SettingsView;
  candidates: Candidate[];
  kinds: string[];
  loginItem?: { supported: boolean; enabled: boolean };
} = { candidates: [], kinds: [] };

const kindName = (kind: string): string => (has(`ui.settings.kind.${kind}`) ? t(`ui.settings.kind.${kind}`) : kind);
const accessName = (a: string): string => t(a === 'read_write' ? 'ui.settings.read_write' : 'ui.settings.read');
const option = (value: string, text: string): HTMLOptionElement => {
  const o = document.createElement('option');
  o.value = value;
  o.textContent = text;
  return o;
};

// ------------------------------------------------------------ shared folders and devices
function grantRow(g: GrantView): HTMLLIElement {
  const li = document.createElement('li');
  li.dataset['kind'] = g.kind;
  li.dataset['id'] = g.id;
  li.dataset['source'] = g.source;
  const text = document.createElement('span');
  text.className = 'grow';
  const name = g.alias ? t('ui.settings.named', { alias: g.alias, id: g.id }) : g.id;
  const kind = kindName(g.kind);
  const line = g.access ? t('ui.settings.grant_access', { kind, name, access: accessName(g.access) }) : t('ui.settings.grant', { kind, name });
  text.textContent = line;
  // The administrator's own entries are theirs to change: said so, and no Remove button.
  if (g.source === 'config') {
    const admin = document.createElement('span');
    admin.className = 'muted';
    admin.textContent = t('ui.settings.from_admin');
    li.append(text, admin);
    return li;
  }
  const remove = document.createElement('button');
  remove.type = 'button';
  remove.textContent = t('ui.settings.remove');
  remove.setAttribute('aria-label', t('ui.settings.remove_named', { name: g.alias ?? g.id }));
  remove.addEventListener('click', () =>
    act(async () => {
      await control.removeGrant({ kind: g.kind, id: g.id });
      await refreshGrants();
      $('device-kind').focus();
    }),
  );
  li.append(text, remove);
  return li;
}

/** The admin's ceiling for a kind, as a sentence (undefined: the kind has none). */
function ceilingText(kind: string): string | undefined {
  const c = data.grants?.ceilings?.[kind];
  if (!c) return undefined;
  // The kind's plural name ("folders"), not the singular of a row's label ("Folder").
  const kinds = has(`ui.settings.kinds.${kind}`) ? t(`ui.settings.kinds.${kind}`) : kind;
  if (c.length === 0) return t('ui.settings.ceiling_closed', { kinds });
  if (c.some((g) => g.id === '*')) return undefined;
  return t('ui.settings.ceiling', { kinds, list: c.map((g) => g.alias ?? g.id).join(t('ui.risk.separator')) });
}

function renderGrants(): void {
  if (!data.grants) return;
  const all = Object.values(data.grants.grants).flat();
  $('grants').replaceChildren(...all.map(grantRow));
  $('no-grants').hidden = all.length > 0;
  const notes = [...new Set(['files', select('device-kind').value].filter(Boolean))].map(ceilingText).filter(Boolean);
  $('grants-ceiling').hidden = notes.length === 0;
  $('grants-ceiling').textContent = notes.join(' ');
}

/** The device kinds a loaded handler declared and Settings can list (not `files`: that is the form above). */
function renderKinds(): void {
  const kinds = select('device-kind');
  const chosen = kinds.value;
  kinds.replaceChildren(...data.kinds.map((k) => option(k, kindName(k))));
  if (data.kinds.includes(chosen)) kinds.value = chosen;
  $('device-form').hidden = data.kinds.length === 0;
}

function renderCandidates(): void {
  const pick = select('device-pick');
  pick.replaceChildren(
    option('', t(data.candidates.length ? 'ui.settings.device.choose' : 'ui.settings.device.none_found')),
    ...data.candidates.map((c) => {
      const name = c.label ? t('ui.settings.device.labelled', { label: c.label, id: c.id }) : c.id;
      return option(c.id, c.alias ? t('ui.settings.device.shared_as', { name, alias: c.alias }) : name);
    }),
  );
  pick.disabled = data.candidates.length === 0;
}

async function refreshGrants(): Promise<void> {
  data.grants = await control.listGrants();
  renderGrants();
}

// ------------------------------------------------------------ functions
/** The function's title in the page's language (the descriptor's own words for an adapter without a catalogue). */
const titleOf = (f: FunctionView): string => (f.title_key && has(f.title_key) ? t(f.title_key) : f.name);
const descriptionOf = (f: FunctionView): string => (f.description_key && has(f.description_key) ? t(f.description_key) : f.description);

function functionRow(f: FunctionView): HTMLLIElement {
  const li = document.createElement('li');
  li.dataset['functionId'] = f.id;
  const label = document.createElement('label');
  label.className = 'grow check';
  const box = document.createElement('input');
  box.type = 'checkbox';
  box.checked = f.enabled;
  box.disabled = f.admin_disabled;
  const text = document.createElement('span');
  text.className = `risk-${f.permission_level}`;
  // The id as code (what a person types in a policy or a command), the rest in words.
  const params = { name: titleOf(f), id: f.id, risk: tm(riskMessage(f, has)) };
  text.replaceChildren(...tNodes(f.admin_disabled ? 'ui.settings.functions.row_admin_off' : 'ui.settings.functions.row', params, ['id']));
  const about = document.createElement('span');
  about.className = 'muted function-description';
  about.textContent = descriptionOf(f);
  label.append(box, text, about);
  box.addEventListener('change', () =>
    act(async () => {
      try {
        const r = await control.setFunction({ id: f.id, enabled: box.checked });
        f.enabled = r.function.enabled;
      } finally {
        box.checked = f.enabled;
      }
    }),
  );
  li.append(label);
  return li;
}

/** The group a function is listed under: its handler (a built-in one by name) or its adapter (its id as code). */
function groupHeading(source: string): Node[] {
  if (source.startsWith('adapter:')) return tNodes('ui.functions.group.adapter', { id: source.slice('adapter:'.length) }, ['id']);
  return has(`ui.functions.group.${source}`) ? [document.createTextNode(t(`ui.functions.group.${source}`))] : tNodes('ui.functions.group.other', { id: source }, ['id']);
}
const groupName = (source: string): string => groupHeading(source).map((n) => n.textContent).join('');

/** True when the search words are all in the function's title, id or description (any case). */
function matches(f: FunctionView, query: string): boolean {
  const hay = `${titleOf(f)} ${f.id} ${descriptionOf(f)}`.toLocaleLowerCase();
  return query
    .toLocaleLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((w) => hay.includes(w));
}

/** The functions grouped by handler (built-in handlers first, then adapters), the ones the search matches. */
function renderFunctionGroups(): void {
  const fns = data.functions;
  if (!fns) return;
  const query = input('functions-search').value.trim();
  const shown = fns.filter((f) => matches(f, query));
  const groups = new Map<string, FunctionView[]>();
  for (const f of shown) {
    const source = f.source ?? 'other';
    groups.set(source, [...(groups.get(source) ?? []), f]);
  }
  const order = [...groups.keys()].sort((a, b) => Number(a.startsWith('adapter:')) - Number(b.startsWith('adapter:')) || groupName(a).localeCompare(groupName(b)));
  $('functions').replaceChildren(
    ...order.map((source, i) => {
      const section = document.createElement('section');
      section.className = 'function-group';
      section.dataset['group'] = source;
      const h = document.createElement('h3');
      h.id = `functions-group-${i}`;
      h.replaceChildren(...groupHeading(source));
      section.setAttribute('aria-labelledby', h.id);
      const ul = document.createElement('ul');
      ul.className = 'list';
      ul.replaceChildren(...groups.get(source)!.map(functionRow));
      section.append(h, ul);
      return section;
    }),
  );
  $('functions-count').textContent = query
    ? shown.length
      ? t('ui.functions.count_match', { count: formatCount(shown.length), total: formatCount(fns.length) })
      : t('ui.functions.none_match')
    : t(countKey('ui.functions.count', fns.length), { count: formatCount(fns.length) });
}

/** One line about a local adapter: a new one waiting for approval, or one running without the sandbox. */
function adapterLine(key: 'ui.settings.adapters.waiting' | 'ui.settings.adapters.unsandboxed', id: string): HTMLLIElement {
  const li = document.createElement('li');
  li.dataset['adapter'] = id;
  li.dataset['state'] = key === 'ui.settings.adapters.waiting' ? 'waiting' : 'unsandboxed';
  li.textContent = t(key, { id });
  return li;
}

function renderFunctions(): void {
  renderFunctionGroups();
  const a = data.adapters;
  const lines = a ? [...a.pending.map((id) => adapterLine('ui.settings.adapters.waiting', id)), ...a.unsandboxed.map((id) => adapterLine('ui.settings.adapters.unsandboxed', id))] : [];
  $('adapters-waiting').replaceChildren(...lines);
  $('adapters-box').hidden = lines.length === 0;
}

async function refreshFunctions(): Promise<void> {
  const [fns, status] = await Promise.all([control.listFunctions(), control.status()]);
  data.functions = fns.functions;
  data.adapters = status.adapters;
  renderFunctions();
  changed();
}

/** The local adapters waiting for the person's approval (Home names how many). */
export const waitingAdapters = (): readonly string[] => data.adapters?.pending ?? [];

// ------------------------------------------------------------ general and about
function renderGeneral(): void {
  const a = data.about;
  if (!a) return;
  const level = select('log-level');
  level.replaceChildren(...a.log_levels.map((l) => option(l, has(`ui.settings.log.${l}`) ? t(`ui.settings.log.${l}`) : l)));
  level.value = a.log_level ?? 'info';
  $('about-version').textContent = a.version;
  $('about-protocol').textContent = a.protocol_version
    ? t('ui.settings.about.protocol_value', { negotiated: a.protocol_version, offered: a.protocol_offered })
    : t('ui.settings.about.protocol_none', { offered: a.protocol_offered });
  $('about-data-dir').textContent = a.data_dir;
  $('about-logs').textContent = a.log_file ?? t('ui.settings.about.logs_stderr');
  if (data.loginItem) {
    $('login-item-row').hidden = !data.loginItem.supported;
    input('login-item').checked = data.loginItem.enabled;
  }
}

async function refreshAbout(): Promise<void> {
  data.about = await control.getSettings();
  data.kinds = Object.keys(data.about.grant_id_keys ?? {});
  renderKinds();
  if (shell) data.loginItem = await unwrap(shell.getLoginItem());
  renderGeneral();
}

// ------------------------------------------------------------ wiring
/** Wires the screen; `shellApi`: the Electron shell's own operations, when the page runs in the window. */
export function wire(shellApi: Shell | undefined): void {
  shell = shellApi;
  if (shellApi) {
    const s = shellApi;
    $('share-pick').hidden = false;
    $('open-logs').hidden = false;
    $('share-pick').addEventListener('click', () =>
      act(async () => {
        const folder = await unwrap(s.pickFolder());
        if (folder) input('share-path').value = folder;
        $('share-path').focus();
      }),
    );
    $('open-logs').addEventListener('click', () => act(() => unwrap(s.openLogs())));
    $('login-item').addEventListener('change', () =>
      act(async () => {
        try {
          data.loginItem = await unwrap(s.setLoginItem(input('login-item').checked));
        } finally {
          renderGeneral();
        }
      }),
    );
  }
  $('share-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void act(async () => {
      const entry: { path: string; access: string; alias?: string } = { path: input('share-path').value.trim(), access: select('share-access').value };
      const alias = input('share-alias').value.trim();
      if (alias) entry.alias = alias;
      await control.addGrant({ kind: 'files', entry });
      input('share-path').value = '';
      input('share-alias').value = '';
      await refreshGrants();
    });
  });
  $('device-kind').addEventListener('change', () => {
    data.candidates = [];
    renderCandidates();
    renderGrants();
  });
  $('device-find').addEventListener('click', () =>
    act(async () => {
      const kind = select('device-kind').value;
      const status = $('device-finding');
      status.hidden = false;
      status.textContent = t('ui.settings.device.finding');
      try {
        data.candidates = (await control.grantCandidates({ kind })).candidates;
      } finally {
        status.hidden = true;
        renderCandidates();
      }
      $(data.candidates.length ? 'device-pick' : 'device-id').focus();
    }),
  );
  $('device-pick').addEventListener('change', () => {
    const c = data.candidates.find((x) => x.id === select('device-pick').value);
    if (!c) return;
    input('device-id').value = c.id;
    if (c.alias && !input('device-alias').value) input('device-alias').value = c.alias;
  });
  $('device-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void act(async () => {
      const kind = select('device-kind').value;
      const id = input('device-id').value.trim();
      const alias = input('device-alias').value.trim();
      const key = data.about?.grant_id_keys?.[kind] ?? 'id';
      await control.addGrant({ kind, entry: alias ? { [key]: id, alias } : id });
      input('device-id').value = '';
      input('device-alias').value = '';
      await refreshGrants();
    });
  });
  $('functions-search').addEventListener('input', renderFunctionGroups);
  $('log-level').addEventListener('change', () =>
    act(async () => {
      try {
        const r = await control.setLogLevel({ level: select('log-level').value as LogLevel });
        if (data.about) data.about.log_level = r.log_level;
      } finally {
        renderGeneral();
      }
    }),
  );
  renderCandidates();
}

/** The agent says the grants changed (in another window, or here): list them again. */
export async function grantsChanged(): Promise<void> {
  await refreshGrants();
}

/** Reads everything again (after connecting). */
export async function refresh(): Promise<void> {
  await Promise.all([refreshAbout(), refreshGrants(), refreshFunctions()]);
}

/** Renders every string again in the page's new language. */
export function render(): void {
  renderKinds();
  renderCandidates();
  renderGrants();
  renderFunctions();
  renderGeneral();
}
