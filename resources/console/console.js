// The bridge console: a QA person signs in with a runtime token, sees the workspace's devices, fills in
// one function's arguments in a form made from its input schema, runs it, and watches its states live.
// Plain browser code, no dependencies; every request goes to this bridge's own runtime API.
'use strict';

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = 'aios-console-token';
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'rejected', 'expired', 'unknown']);
let devices = [];
let current = null; // the device shown
let running = null; // { callId, abort }

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
    throw new Error('The bridge answered ' + res.status + ' with a body that is not JSON.');
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
  const t = $('token').value.trim();
  if (!t) {
    $('signin-error').textContent = 'Enter a runtime token.';
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, t);
  try {
    await loadDevices();
    $('signin-error').textContent = '';
  } catch (e) {
    sessionStorage.removeItem(TOKEN_KEY);
    $('signin-error').textContent = e.status === 401 ? 'This token is not a valid runtime token for this bridge.' : e.message;
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
  const ws = devices[0] ? devices[0].workspace_id : '';
  $('who').textContent = ws ? 'workspace ' + ws : 'signed in';
  const rows = $('device-rows');
  rows.replaceChildren();
  if (!devices.length) rows.append(el('tr', {}, el('td', { colspan: '6' }, 'No devices in this workspace yet.')));
  for (const d of devices) {
    const open = () => void showDevice(d.device_id);
    const row = el('tr', { class: 'device-row', tabindex: '0', 'data-device': d.device_id, onclick: open, onkeydown: (ev) => { if (ev.key === 'Enter' || ev.key === ' ') { ev.preventDefault(); open(); } } },
      el('td', {}, el('code', {}, d.device_id)),
      el('td', {}, d.name || ''),
      el('td', { class: d.online ? 'online' : 'offline' }, d.online ? 'online' : 'offline'),
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
  $('device-h').textContent = 'Device ' + (d.name ? d.name + ' (' + d.device_id + ')' : d.device_id);
  const facts = $('device-facts');
  facts.replaceChildren();
  const fact = (k, v) => facts.append(el('dt', {}, k), el('dd', {}, v === null || v === undefined || v === '' ? '—' : String(v)));
  fact('state', d.online ? 'online' : 'offline');
  fact('client version', d.client_version);
  fact('protocol', d.protocol_version);
  fact('bridge minimum client', d.min_client_version);
  fact('last refused hello', d.last_refused_hello ? d.last_refused_hello.type + ': ' + d.last_refused_hello.message : '');
  fact('user', d.user_id);
  const sel = $('fn');
  sel.replaceChildren();
  for (const f of d.functions || []) sel.append(el('option', { value: f.id }, f.id + ' — ' + f.name + ' (' + f.permission_level + ')'));
  buildForm();
  sel.focus();
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
    const label = el('label', { for: id }, name + (required.has(name) ? ' (required)' : ''));
    let input;
    const type = Array.isArray(p.type) ? p.type.find((t) => t !== 'null') : p.type;
    if (Array.isArray(p.enum)) {
      input = el('select', { id, 'data-arg': name, 'data-kind': 'enum' }, el('option', { value: '' }, '(not set)'), ...p.enum.map((v) => el('option', { value: JSON.stringify(v) }, String(v))));
    } else if (type === 'boolean') {
      input = el('select', { id, 'data-arg': name, 'data-kind': 'enum' }, el('option', { value: '' }, '(not set)'), el('option', { value: 'true' }, 'true'), el('option', { value: 'false' }, 'false'));
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
  if (!Object.keys(props).length) form.append(el('p', { class: 'hint' }, 'This function takes no arguments.'));
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
    $('run-error').textContent = 'A JSON field does not parse yet.';
  }
}

async function run() {
  const f = fnDescriptor();
  if (!f || !current) return;
  let args;
  try {
    args = JSON.parse($('args-json').value || '{}');
  } catch {
    $('run-error').textContent = 'The arguments are not valid JSON.';
    return;
  }
  const body = { workspace_id: current.workspace_id, device_id: current.device_id, function: f.id, arguments: args, wait: false, requester: { kind: 'qa', id: 'bridge-console', name: 'Bridge console' } };
  const t = Number($('timeout').value);
  if (t > 0) body.timeout_ms = t;
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
  $('call-state').textContent = 'submitted';
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
    if (e.name !== 'AbortError') $('run-error').textContent = 'Lost the live view: ' + e.message;
  }
  if (running && running.callId === callId) {
    const rec = await api('GET', '/v1/calls/' + encodeURIComponent(callId));
    if (rec.outcome) onEvent('outcome', rec.outcome);
  }
}

function onEvent(type, data) {
  if (type === 'state') {
    $('call-state').textContent = data.state;
    $('call-events').append(el('li', {}, data.state + ' at ' + data.at));
  } else if (type === 'progress') {
    $('call-events').append(el('li', {}, 'progress ' + [data.progress, data.total].filter((x) => x !== undefined).join('/') + (data.message ? ' — ' + data.message : '')));
  } else if (type === 'outcome') {
    $('call-state').textContent = data.state + (data.error ? ' (' + data.error.type + ')' : '');
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
