// The bridge console: a QA person signs in with a runtime token, sees the workspace's devices, fills in
// one function's arguments in a form made from its input schema, runs it, and watches its states live.
// Plain browser code, no dependencies; every request goes to this bridge's own runtime API.
'use strict';

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'aios-console-token';
const LANG_KEY = 'aios-console-lang';
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'rejected', 'expired', 'unknown']);
let devices = [];
let current = null; // the device shown
let running = null; // { callId, abort }
let words = {}; // the console's catalogue in the page's language (/console/i18n/<locale>.json)

// A sentence from the catalogue with its {params} filled; the key itself when the catalogue lacks it.
function t(key, params) {
  const template = words[key] || key;
  return template.replace(/\{([A-Za-z_]+)\}/g, (whole, name) => (params && name in params ? String(params[name]) : whole));
}

// A call state in words (the wire name stays in data-state for programs and tests).
function stateWord(state) {
  return words['bridge.console.state.' + state] ? t('bridge.console.state.' + state) : state;
}

// The language: the page's switch when it was used, else the browser's first Chinese or English language.
function pickLanguage() {
  const saved = localStorage.getItem(LANG_KEY);
  if (saved === 'en' || saved === 'zh-CN') return saved;
  for (const l of navigator.languages || [navigator.language]) {
    if (/^zh(-|$)/i.test(l)) return 'zh-CN';
    if (/^en(-|$)/i.test(l)) return 'en';
  }
  return 'en';
}

async function setLanguage(lang) {
  const res = await fetch('i18n/' + lang + '.json');
  if (!res.ok) return;
  words = await res.json();
  document.documentElement.lang = lang;
  $('lang').value = lang;
  for (const n of document.querySelectorAll('[data-t]')) n.textContent = t(n.getAttribute('data-t'));
  for (const n of document.querySelectorAll('[data-t-label]')) n.setAttribute('aria-label', t(n.getAttribute('data-t-label')));
  if (!$('devices').hidden) renderDevices();
  if (current) renderDevice(current);
  if (running) {
    for (const li of $('call-events').children) renderEvent(li);
    const s = $('call-state');
    if (s.dataset.state) s.textContent = stateWord(s.dataset.state) + (s.dataset.error ? ' (' + s.dataset.error + ')' : '');
  }
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: { Authorization: 'Bearer ' + token(), ...(body ? { 'Content-Type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let data;
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    throw new Error(t('bridge.console.err.not_json', { status: res.status }));
  }
  if (res.status >= 400) {
    const e = new Error(data.error ? data.error.type + ': ' + data.error.message : 'HTTP ' + res.status);
    e.status = res.status;
    throw e;
  }
  return data;
}

function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') n.className = v;
    else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v);
  }
  for (const c of children) n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return n;
}

async function signIn() {
  const typed = $('token').value.trim();
  if (!typed) {
    $('signin-error').textContent = t('bridge.console.signin.empty');
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, typed);
  try {
    await loadDevices();
    $('signin-error').textContent = '';
  } catch (e) {
    sessionStorage.removeItem(TOKEN_KEY);
    $('signin-error').textContent = e.status === 401 ? t('bridge.console.signin.refused') : e.message;
  }
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  for (const id of ['devices', 'device', 'call']) $(id).hidden = true;
  $('signin').hidden = false;
  $('who').textContent = '';
  $('token').value = '';
  $('token').focus();
}

async function loadDevices() {
  const data = await api('GET', '/v1/devices');
  devices = data.devices || [];
  $('signin').hidden = true;
  $('devices').hidden = false;
  renderDevices();
}

function renderDevices() {
  const ws = devices[0] ? devices[0].workspace_id : '';
  $('who').textContent = ws ? t('bridge.console.who.workspace', { workspace: ws }) : t('bridge.console.who.signed_in');
  const rows = $('device-rows');
  rows.replaceChildren();
  if (!devices.length) rows.append(el('tr', {}, el('td', { colspan: '6' }, t('bridge.console.devices.none'))));
  for (const d of devices) {
    const open = () => void showDevice(d.device_id);
    const row = el('tr', { class: 'device-row', tabindex: '0', 'data-device': d.device_id, onclick: open, onkeydown: (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); open(); } } },
      el('td', {}, el('code', {}, d.device_id)),
      el('td', {}, d.name || ''),
      el('td', { class: d.online ? 'online' : 'offline' }, t(d.online ? 'bridge.console.online' : 'bridge.console.offline')),
      el('td', {}, d.client_version || ''),
      el('td', {}, [d.platform, d.arch].filter(Boolean).join('/')),
      el('td', {}, String((d.functions || []).length)));
    rows.append(row);
  }
}

async function showDevice(id) {
  const d = await api('GET', '/v1/devices/' + encodeURIComponent(id));
  current = d;
  $('device').hidden = false;
  renderDevice(d);
  $('fn').focus();
}

function renderDevice(d) {
  $('device-h').textContent = t('bridge.console.device.title', { device: d.name ? d.name + ' (' + d.device_id + ')' : d.device_id });
  const facts = $('device-facts');
  facts.replaceChildren();
  const fact = (k, v) => facts.append(el('dt', {}, t(k)), el('dd', {}, v === null || v === undefined || v === '' ? '—' : String(v)));
  fact('bridge.console.fact.state', t(d.online ? 'bridge.console.online' : 'bridge.console.offline'));
  fact('bridge.console.fact.client', d.client_version);
  fact('bridge.console.fact.protocol', d.protocol_version);
  fact('bridge.console.fact.min_client', d.min_client_version);
  fact('bridge.console.fact.refused', d.last_refused_hello ? d.last_refused_hello.type + ': ' + d.last_refused_hello.message : '');
  fact('bridge.console.fact.user', d.user_id);
  const sel = $('fn');
  const chosen = sel.value;
  sel.replaceChildren();
  for (const f of d.functions || []) sel.append(el('option', { value: f.id }, t('bridge.console.fn.option', { id: f.id, name: f.name, level: t('bridge.console.level.' + f.permission_level) })));
  if (chosen && (d.functions || []).some((f) => f.id === chosen)) sel.value = chosen;
  buildForm();
}

function fnDescriptor() {
  return current && (current.functions || []).find((f) => f.id === $('fn').value);
}

// One input per top-level property of the input schema; anything nested is edited as JSON.
function buildForm() {
  const f = fnDescriptor();
  const form = $('fn-form');
  form.replaceChildren();
  $('fn-desc').textContent = f ? f.description : '';
  if (!f) return;
  const schema = f.input_schema || {};
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  for (const [name, p] of Object.entries(props)) {
    const id = 'arg-' + name;
    // The schema's title names the field when it has one; the argument's own name follows as code.
    const label = el('label', { for: id }, p.title ? p.title + ' ' : '', p.title ? el('code', {}, name) : name, required.has(name) ? ' ' + t('bridge.console.arg.required') : '');
    let input;
    const type = Array.isArray(p.type) ? p.type.find((ty) => ty !== 'null') : p.type;
    if (Array.isArray(p.enum)) {
      input = el('select', { id, 'data-arg': name, 'data-kind': 'enum' }, el('option', { value: '' }, t('bridge.console.arg.not_set')), ...p.enum.map((v) => el('option', { value: JSON.stringify(v) }, String(v))));
    } else if (type === 'boolean') {
      input = el('select', { id, 'data-arg': name, 'data-kind': 'enum' }, el('option', { value: '' }, t('bridge.console.arg.not_set')), el('option', { value: 'true' }, t('bridge.console.arg.yes')), el('option', { value: 'false' }, t('bridge.console.arg.no')));
    } else if (type === 'integer' || type === 'number') {
      input = el('input', { id, type: 'number', 'data-arg': name, 'data-kind': type, ...(p.minimum !== undefined ? { min: String(p.minimum) } : {}), ...(p.maximum !== undefined ? { max: String(p.maximum) } : {}) });
    } else if (type === 'string') {
      input = el('input', { id, type: 'text', 'data-arg': name, 'data-kind': 'string', spellcheck: 'false' });
    } else {
      input = el('textarea', { id, rows: '3', 'data-arg': name, 'data-kind': 'json', spellcheck: 'false' });
    }
    input.addEventListener('input', syncJson);
    form.append(label, input);
    if (p.description) form.append(el('div', { class: 'hint' }, p.description));
  }
  if (!Object.keys(props).length) form.append(el('p', { class: 'hint' }, t('bridge.console.fn.no_args')));
  syncJson();
}

function formArgs() {
  const args = {};
  for (const input of $('fn-form').querySelectorAll('[data-arg]')) {
    const v = input.value;
    if (v === '') continue;
    const kind = input.getAttribute('data-kind');
    const name = input.getAttribute('data-arg');
    if (kind === 'string') args[name] = v;
    else if (kind === 'integer' || kind === 'number') args[name] = Number(v);
    else args[name] = JSON.parse(v);
  }
  return args;
}

function syncJson() {
  try {
    $('args-json').value = JSON.stringify(formArgs(), null, 2);
    $('run-error').textContent = '';
  } catch {
    $('run-error').textContent = t('bridge.console.err.json_field');
  }
}

async function run() {
  const f = fnDescriptor();
  if (!f || !current) return;
  let args;
  try {
    args = JSON.parse($('args-json').value || '{}');
  } catch {
    $('run-error').textContent = t('bridge.console.err.json');
    return;
  }
  const body = { workspace_id: current.workspace_id, device_id: current.device_id, function: f.id, arguments: args, wait: false, requester: { kind: 'qa', id: 'bridge-console', name: 'Bridge console' } };
  const timeoutMs = Number($('timeout').value);
  if (timeoutMs > 0) body.timeout_ms = timeoutMs;
  $('run-error').textContent = '';
  let record;
  try {
    record = await api('POST', '/v1/calls', body);
  } catch (e) {
    $('run-error').textContent = e.message;
    return;
  }
  watch(record.call_id);
}

// Server-Sent Events over fetch (EventSource cannot send the Authorization header).
async function watch(callId) {
  if (running) running.abort.abort();
  const abort = new AbortController();
  running = { callId, abort };
  $('call').hidden = false;
  $('call-id').textContent = callId;
  setState('submitted');
  $('call-events').replaceChildren();
  $('call-outcome').textContent = '';
  $('cancel').disabled = false;
  try {
    const res = await fetch('/v1/calls/' + encodeURIComponent(callId) + '/events', { headers: { Authorization: 'Bearer ' + token() }, signal: abort.signal });
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const event = /^event: (.*)$/m.exec(block);
        const data = /^data: (.*)$/m.exec(block);
        if (event && data) onEvent(event[1], JSON.parse(data[1]));
      }
    }
  } catch (e) {
    if (e.name !== 'AbortError') $('run-error').textContent = t('bridge.console.err.live', { error: e.message });
  }
  if (running && running.callId === callId) {
    const rec = await api('GET', '/v1/calls/' + encodeURIComponent(callId));
    if (rec.outcome) onEvent('outcome', rec.outcome);
  }
}

// The call's state in words; the wire state and error type stay in data-* attributes.
function setState(state, errorType) {
  const s = $('call-state');
  s.dataset.state = state;
  if (errorType) s.dataset.error = errorType;
  else delete s.dataset.error;
  s.textContent = stateWord(state) + (errorType ? ' (' + errorType + ')' : '');
}

// One line of the live list, from the event it keeps in data-* (so a language switch can re-render it).
function renderEvent(li) {
  const d = li.dataset;
  if (d.kind === 'state') li.textContent = t('bridge.console.call.at', { state: stateWord(d.state), at: d.at });
  else li.textContent = t('bridge.console.call.progress', { progress: d.progress }) + (d.message ? ' — ' + d.message : '');
}

function onEvent(type, data) {
  if (type === 'state') {
    setState(data.state);
    const li = el('li', { 'data-kind': 'state', 'data-state': data.state, 'data-at': data.at });
    renderEvent(li);
    $('call-events').append(li);
  } else if (type === 'progress') {
    const li = el('li', { 'data-kind': 'progress', 'data-progress': [data.progress, data.total].filter((x) => x !== undefined).join('/'), ...(data.message ? { 'data-message': data.message } : {}) });
    renderEvent(li);
    $('call-events').append(li);
  } else if (type === 'outcome') {
    setState(data.state, data.error ? data.error.type : undefined);
    $('call-outcome').textContent = JSON.stringify(data, null, 2);
    $('cancel').disabled = TERMINAL.has(data.state);
  }
}

async function cancel() {
  if (!running) return;
  try {
    await api('POST', '/v1/calls/' + encodeURIComponent(running.callId) + '/cancel', { reason: 'cancelled from the bridge console' });
  } catch (e) {
    $('run-error').textContent = e.message;
  }
}

document.addEventListener('DOMContentLoaded', () => {
  $('lang').addEventListener('change', () => {
    localStorage.setItem(LANG_KEY, $('lang').value);
    void setLanguage($('lang').value);
  });
  // The words arrive while the page already works (its English text is the fallback until then).
  void setLanguage(pickLanguage());
  $('signin-btn').addEventListener('click', signIn);
  $('token').addEventListener('keydown', (e) => { if (e.key === 'Enter') void signIn(); });
  $('signout').addEventListener('click', signOut);
  $('refresh').addEventListener('click', () => void loadDevices());
  $('fn').addEventListener('change', buildForm);
  $('run').addEventListener('click', () => void run());
  $('cancel').addEventListener('click', () => void cancel());
  if (token()) loadDevices().catch(signOut);
  else $('token').focus();
});
