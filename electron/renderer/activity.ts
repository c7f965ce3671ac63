/**
 * The activity screen: recent calls with filters (function, state, requester, time range) sent to
 * control.activity.list, one call's details below the list, and exports of every call the filters match,
 * as JSON and as CSV (RFC 4180).
 */
import { countKey, has, t, tm, tNodes } from './catalogue.js';
import type { WordsMessage } from '../../src/control/words.js';
import type { ActivityFilter, CallRow } from './control-types.js';
import { $, input, select } from './dom.js';
import { formatCount, formatDuration, formatSize, formatTime } from './format.js';
import { act, control } from './page.js';

const ACTIVITY_PAGE = 100;
/** The audit list's own cap (src/consent/audit-log.ts): an export asks for all of it. */
const EXPORT_LIMIT = 10_000;
const activity: { calls: CallRow[]; selected?: string; opener?: string; exported?: { count: number; format: 'json' | 'csv'; size: number } } = { calls: [] };

/** The sentence its prompt showed, in the page's language when the agent sent it as a key ('' when none). */
function sentenceOf(c: CallRow): string {
  const m = c.sentence_message as WordsMessage | undefined;
  return m && has(m.key) ? tm(m) : (c.sentence ?? '');
}

const callStateText = (s: string): string => (has(`ui.activity.state.${s}`) ? t(`ui.activity.state.${s}`) : t('ui.state.other', { state: s }));
/** Who asked, by the name or id the caller gave; a caller that gave neither is said to be unnamed (not "unknown", which reads like a state). */
const byText = (c: CallRow): string => c.requester_name || c.requester_id || t('ui.requester.unnamed');

/** Why a call did not complete, in words (its wire code stays in the details, as code). */
export const reasonText = (c: CallRow): string | undefined =>
  c.error_type ? (has(`ui.activity.error.${c.error_type}`) ? t(`ui.activity.error.${c.error_type}`) : t('ui.activity.error.other')) : undefined;

/** What a call did: the sentence its prompt showed, else the function (its id, as code) and what it applied to. */
function whatNodes(c: CallRow): string | Node[] {
  const sentence = sentenceOf(c);
  if (sentence) return sentence;
  const on = (c.resources ?? []).map((r) => r.label).join(', ');
  return on ? tNodes('ui.activity.on', { function: c.function_id, resources: on }, ['function']) : tNodes('ui.activity.function', { function: c.function_id }, ['function']);
}

/** One call in a sentence: what, its state, who asked (Home and the activity list), as nodes for a `<span>`. */
export const callLine = (c: CallRow): Node[] => tNodes('ui.activity.row', { what: whatNodes(c), state: callStateText(c.state), by: byText(c) });

/** The filters as control.activity.list takes them (empty fields left out; local times → ISO). */
function activityFilter(): ActivityFilter {
  const f: ActivityFilter = {};
  const fn = input('activity-function').value.trim();
  const st = select('activity-state').value;
  const who = input('activity-requester').value.trim();
  if (fn) f.function = fn;
  if (st) f.state = st;
  if (who) f.requester = who;
  for (const [id, key] of [['activity-from', 'since'], ['activity-to', 'until']] as const) {
    const v = input(id).value;
    if (v && !Number.isNaN(new Date(v).getTime())) f[key] = new Date(v).toISOString();
  }
  return f;
}

/** One call in words with its reason (Activity's rows and Home's latest calls). */
export function callText(c: CallRow): HTMLSpanElement {
  const text = document.createElement('span');
  text.className = 'grow';
  text.replaceChildren(...callLine(c));
  const why = reasonText(c);
  if (why) {
    const reason = document.createElement('span');
    reason.className = 'reason muted';
    reason.textContent = why;
    text.append(reason);
  }
  return text;
}

/** When a call finished, as a `<time>` (empty while it runs). */
export function callTime(c: CallRow): HTMLTimeElement {
  const time = document.createElement('time');
  time.className = 'muted';
  time.dataset['value'] = '';
  if (c.finished_at) {
    time.dateTime = c.finished_at;
    time.textContent = formatTime(c.finished_at);
  }
  return time;
}

function activityRow(c: CallRow): HTMLLIElement {
  const li = document.createElement('li');
  li.dataset['callId'] = c.call_id;
  li.dataset['state'] = c.state;
  li.dataset['function'] = c.function_id;
  const text = callText(c);
  text.id = `activity-row-${c.call_id}`;
  const time = callTime(c);
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

function renderList(): void {
  $('activity').replaceChildren(...activity.calls.map(activityRow));
  $('no-activity').hidden = activity.calls.length > 0;
}

function renderDetails(): void {
  const c = activity.calls.find((x) => x.call_id === activity.selected);
  $('activity-details').hidden = !c;
  if (!c) return;
  const put = (id: string, text: string): void => {
    $(id).textContent = text;
  };
  const dash = t('ui.activity.details.none');
  put('ad-sentence', sentenceOf(c));
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
  // Its code beside it, as code (what a person quotes to support).
  if (c.error_type) $('ad-error').replaceChildren(...tNodes('ui.activity.details.error_value', { message: reasonText(c)!, type: c.error_type }, ['type']));
  else put('ad-error', dash);
  put('ad-args', c.args_summary === null || c.args_summary === undefined ? '' : JSON.stringify(c.args_summary, null, 2));
  put('ad-call-id', c.call_id);
}

const rowButtons = (): NodeListOf<HTMLButtonElement> => document.querySelectorAll<HTMLButtonElement>('#activity li button');

function openDetails(callId: string, opener: HTMLButtonElement): void {
  activity.selected = callId;
  activity.opener = callId;
  for (const b of rowButtons()) b.setAttribute('aria-expanded', 'false');
  opener.setAttribute('aria-expanded', 'true');
  renderDetails();
  $('activity-details').focus();
}

function closeDetails(): void {
  const back = [...document.querySelectorAll<HTMLLIElement>('#activity li')].find((li) => li.dataset['callId'] === activity.opener)?.querySelector('button');
  activity.selected = undefined;
  renderDetails();
  for (const b of rowButtons()) b.setAttribute('aria-expanded', 'false');
  if (back) back.focus();
}

function renderCount(): void {
  const n = activity.calls.length;
  const filtered = Object.keys(activityFilter()).length > 0;
  // A full page is the list's cap, not all there is: say so (the export holds every matching call).
  const capped = n >= ACTIVITY_PAGE;
  const key = filtered ? (capped ? 'ui.activity.count_filtered_capped' : 'ui.activity.count_filtered') : capped ? 'ui.activity.count_capped' : 'ui.activity.count';
  $('activity-count').textContent = n === 0 ? '' : t(countKey(key, n), { count: formatCount(n) });
  $('no-activity').textContent = t(filtered ? 'ui.activity.none_match' : 'ui.activity.none');
}

function fillSuggestions(calls: CallRow[]): void {
  const options = (values: (string | null)[]): HTMLOptionElement[] =>
    [...new Set(values.filter((v): v is string => !!v))].sort().map((v) => Object.assign(document.createElement('option'), { value: v }));
  $('activity-functions').replaceChildren(...options(calls.map((c) => c.function_id)));
  $('activity-requesters').replaceChildren(...options(calls.flatMap((c) => [c.requester_name, c.requester_id])));
}

/** Lists the calls the filters match again. */
export async function refresh(): Promise<void> {
  const r = await control.listActivity({ ...activityFilter(), limit: ACTIVITY_PAGE });
  activity.calls = r.calls;
  if (activity.selected && !r.calls.some((c) => c.call_id === activity.selected)) activity.selected = undefined;
  renderList();
  renderCount();
  renderDetails();
  // Suggestions come from everything recent, not only what the filters let through.
  const all = Object.keys(activityFilter()).length ? (await control.listActivity({ limit: 500 })).calls : r.calls;
  fillSuggestions(all);
  // For tests and scripts: how many refreshes have finished (a submit's answer is the next one).
  const list = $('activity');
  list.dataset['refreshes'] = String(Number(list.dataset['refreshes'] ?? 0) + 1);
}

/** The CSV columns, in order: the audit row's fields, the prompt's sentence, and the nested ones as JSON text. */
const CSV_COLUMNS = ['call_id', 'function_id', 'state', 'error_type', 'decision', 'decided_by', 'remembered', 'requester_kind', 'requester_id', 'requester_name', 'workspace_id', 'user_id', 'sentence', 'resources', 'args_summary', 'accepted_at', 'finished_at', 'duration_ms'];

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, a quote, CR or LF (quotes doubled). A text
 * that a spreadsheet would run as a formula (= + - @ tab CR first) gets a leading apostrophe (OWASP's
 * CSV-injection advice); numbers and booleans are written as they are, null as an empty cell.
 */
function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  let s = typeof v === 'object' ? JSON.stringify(v) : String(v);
  if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** The calls as CSV: a header row, CRLF line ends, and a byte-order mark so spreadsheets read UTF-8 (Chinese). */
function toCsv(calls: CallRow[]): string {
  const rows: unknown[][] = [CSV_COLUMNS, ...calls.map((c) => CSV_COLUMNS.map((k) => c[k]))];
  return '\uFEFF' + rows.map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
}

async function exportActivity(format: 'json' | 'csv'): Promise<void> {
  const r = await control.listActivity({ ...activityFilter(), limit: EXPORT_LIMIT });
  const body = format === 'csv' ? toCsv(r.calls) : JSON.stringify(r.calls, null, 2) + '\n';
  const blob = new Blob([body], { type: format === 'csv' ? 'text/csv;charset=utf-8' : 'application/json' });
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

function renderExported(): void {
  const e = activity.exported;
  $('activity-exported').hidden = !e;
  if (e) $('activity-exported').textContent = t('ui.activity.export.done', { count: formatCount(e.count), format: e.format.toUpperCase(), size: formatSize(e.size) });
}

/** Renders the screen again (a new language). */
export function render(): void {
  renderList();
  renderCount();
  renderDetails();
  renderExported();
}

/** Wires the filters, the exports and the details. */
export function wire(): void {
  $('activity-filters').addEventListener('submit', (e) => {
    e.preventDefault();
    void act(refresh);
  });
  $('activity-state').addEventListener('change', () => act(refresh));
  $('activity-clear').addEventListener('click', () => {
    $<HTMLFormElement>('activity-filters').reset();
    void act(refresh);
  });
  $('activity-export-json').addEventListener('click', () => act(() => exportActivity('json')));
  $('activity-export-csv').addEventListener('click', () => act(() => exportActivity('csv')));
  $('activity-details-close').addEventListener('click', closeDetails);
  $('activity-details').addEventListener('keydown', (e) => {
    if (e.key === 'Escape') closeDetails();
  });
}
