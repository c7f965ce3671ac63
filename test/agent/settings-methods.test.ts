/**
 * The Settings control methods on a real agent and bridge: a function turned off answers
 * `unknown_function` to the runtime and is published nowhere (the bridge's function list, the adapter
 * card it got in a new hello, the local skill index), on again it works, all without a restart; the
 * admin's `functions.disabled` is a ceiling; the log level changes live and persists; the grant
 * listing runs the handler's listing function without a prompt or an audit row; About answers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { callLocal } from '../../src/endpoint/local-client.js';
import { WireError } from '../../src/protocol/errors.js';
import { CLIENT_PROTOCOL_VERSION } from '../../src/protocol/messages.js';
import { APP_VERSION } from '../../src/version.js';
import { serialGrants } from '../../handlers/serial/grant-kind.js';
import { printerGrants } from '../../handlers/printer/index.js';
import { cameraGrants, microphoneGrants, screenGrants } from '../../handlers/media/grants.js';
import { bluetoothGrants } from '../../handlers/bluetooth/index.js';

/** The built-in kinds' listings, as their handlers declare them (GrantKind.listing). */
const GRANT_LISTINGS = Object.fromEntries([serialGrants, printerGrants, cameraGrants, microphoneGrants, screenGrants, bluetoothGrants].map((k) => [k.kind, k.listing!]));
import { ids, inProcessStack, until } from '../helpers/stack.js';
import { startPtyPair } from '../peers/serial-pty.js';

type Fn = { id: string; enabled: boolean; admin_disabled: boolean; permission_level: string };

test('turning a function off and on in Settings: unknown_function, published nowhere, back again, no restart', async () => {
  const s = await inProcessStack({ agent: { functions: { disabled: ['diagnostics.wait'] } } });
  try {
    const ep = { http: s.running.endpoint!.info()!.http, token: s.running.endpoint!.localToken };
    const local = (m: string, p: unknown = {}) => callLocal(ep, m, p);
    const bridgeFns = async () => (await s.client.device(ids.device_id))['functions'] as { id: string }[];
    const cardSkills = async () => ((await s.client.device(ids.device_id))['adapter_card'] as { skills: { id: string }[] }).skills.map((k) => k.id);
    const skillIndex = async () => {
      const r = await fetch(`${ep.http}/.well-known/skill-sharing`, { headers: { Authorization: `Bearer ${ep.token}` } });
      return ((await r.json()) as { skills: { id: string }[] }).skills.map((k) => k.id);
    };
    const echo = () => s.client.call('diagnostics.echo', { value: 'hi' }, { wait: true });

    const list = (await local('control.functions.list')) as { functions: Fn[] };
    const byId = new Map(list.functions.map((f) => [f.id, f]));
    assert.deepEqual([byId.get('diagnostics.echo')?.enabled, byId.get('diagnostics.echo')?.admin_disabled], [true, false]);
    assert.deepEqual([byId.get('diagnostics.wait')?.enabled, byId.get('diagnostics.wait')?.admin_disabled], [false, true]);
    assert.equal(typeof byId.get('diagnostics.echo')?.permission_level, 'string');
    assert.equal((await echo()).record.outcome?.state, 'completed');
    const rev0 = (await s.client.device(ids.device_id))['functions_revision'] as number;

    // Off: the next call is refused, the bridge's list, the card (new hello) and the skill index drop it.
    assert.deepEqual(await local('control.functions.set', { id: 'diagnostics.echo', enabled: false }), { function: { id: 'diagnostics.echo', enabled: false, admin_disabled: false } });
    await until(async () => !(await bridgeFns()).some((f) => f.id === 'diagnostics.echo'), 10_000, 'the bridge drops the function');
    await until(async () => !(await cardSkills()).includes('diagnostics.echo'), 10_000, 'the card from a new hello drops it');
    await until(() => s.bridge.hub.isOnline(ids.device_id), 10_000, 'back online after the new hello');
    assert.ok(((await s.client.device(ids.device_id))['functions_revision'] as number) > rev0, 'a new revision');
    assert.ok(!(await skillIndex()).includes('diagnostics.echo'));
    const refused = await echo();
    assert.equal(refused.record.outcome?.error?.type, 'unknown_function', JSON.stringify(refused.record.outcome));

    // On again: published and callable.
    await local('control.functions.set', { id: 'diagnostics.echo', enabled: true });
    await until(async () => (await cardSkills()).includes('diagnostics.echo'), 10_000, 'the card lists it again');
    await until(async () => (await bridgeFns()).some((f) => f.id === 'diagnostics.echo'), 10_000, 'the bridge lists it again');
    await until(() => s.bridge.hub.isOnline(ids.device_id), 10_000, 'online');
    assert.ok((await skillIndex()).includes('diagnostics.echo'));
    assert.equal((await echo()).record.outcome?.state, 'completed');

    // The ceiling: what the admin turned off cannot be turned on; bad params are typed errors.
    await assert.rejects(local('control.functions.set', { id: 'diagnostics.wait', enabled: true }), (e: unknown) => e instanceof WireError && e.type === 'permission_denied');
    await assert.rejects(local('control.functions.set', { id: 'no.such', enabled: false }), /no function is registered/);
    await assert.rejects(local('control.functions.set', { id: 'diagnostics.echo', enabled: 'no' }), /enabled must be/);
    const stored = JSON.parse(readFileSync(join(s.dir, 'agent', 'user-settings.json'), 'utf8')) as { functions: { disabled: string[] } };
    assert.deepEqual(stored.functions.disabled, []);

    // Without the token: refused.
    const r = await fetch(`${ep.http}/rpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'control.functions.set', params: { id: 'diagnostics.echo', enabled: false } }) });
    assert.equal(r.status, 401);
    assert.equal((await echo()).record.outcome?.state, 'completed');
  } finally {
    await s.stop();
  }
});

test('About, the log level (live, persisted, validated) and grant listings', async () => {
  const pair = await startPtyPair();
  const s = await inProcessStack({ agent: { handlers: { diagnostics: { enabled: true } }, grants: { serial: [{ path: pair.a, alias: 'scale' }] } } });
  try {
    const ep = { http: s.running.endpoint!.info()!.http, token: s.running.endpoint!.localToken };
    const local = (m: string, p: unknown = {}) => callLocal(ep, m, p);
    const about = (await local('control.settings.get')) as Record<string, unknown>;
    assert.equal(about['version'], APP_VERSION);
    // The version the session speaks (this bridge answers the agent's 1.2), and the one the agent offers.
    assert.equal(about['protocol_version'], '1.2');
    assert.equal(about['protocol_offered'], CLIENT_PROTOCOL_VERSION);
    assert.equal(about['data_dir'], join(s.dir, 'agent'));
    assert.equal(about['log_level'], 'silent', 'the test logger');
    assert.equal((about['grant_id_keys'] as Record<string, string>)['serial'], 'path');

    // The quietest level: the test logger writes to stdout once it has a level.
    assert.deepEqual(await local('control.settings.log_level', { level: 'fatal' }), { log_level: 'fatal' });
    assert.equal(((await local('control.settings.get')) as Record<string, unknown>)['log_level'], 'fatal');
    assert.equal(JSON.parse(readFileSync(join(s.dir, 'agent', 'user-settings.json'), 'utf8')).log_level, 'fatal');
    await assert.rejects(local('control.settings.log_level', { level: 'loud' }), /level must be one of/);

    // Serial: the granted pty is listed with its alias (ptys are not in the OS's list, so only once shared).
    const serial = (await local('control.grants.candidates', { kind: 'serial' })) as { candidates: { id: string; alias?: string; granted?: boolean }[] };
    assert.deepEqual(serial.candidates.find((c) => c.id === pair.a), { id: pair.a, alias: 'scale', granted: true });
    // The listing is not a runtime's call: nothing in the activity.
    const activity = (await local('control.activity.list')) as { calls: unknown[] };
    assert.deepEqual(activity.calls, []);
    await assert.rejects(local('control.grants.candidates', { kind: 'nope' }), /no listing for grant kind/);
    await assert.rejects(local('control.grants.candidates', {}), /kind is required/);

    // Every listing names a kind a loaded handler declares and a function it registers, with its output's schema.
    for (const [kind, l] of Object.entries(GRANT_LISTINGS)) {
      assert.ok(s.agent.grants.hasKind(kind), `a handler declares ${kind}`);
      const reg = s.agent.registry.get(l.function);
      assert.ok(reg, `${l.function} is registered`);
      assert.equal(reg.descriptor.permission_level, 'low', `${l.function} only reads`);
    }

    // The ceiling of each kind the config names.
    const grants = (await local('control.grants.list')) as { ceilings: Record<string, { id: string; alias?: string; source: string }[]> };
    assert.deepEqual(grants.ceilings['serial']?.map((g) => [g.id, g.alias, g.source]), [[pair.a, 'scale', 'config']]);
    assert.equal(grants.ceilings['files'], undefined, 'a kind the config does not name has no ceiling');
  } finally {
    await s.stop();
    await pair.kill();
  }
});

test('each listing reads its function\'s output as candidates (id, label, alias, granted)', () => {
  const c = (kind: string, out: unknown) => GRANT_LISTINGS[kind]!.candidates(out);
  assert.deepEqual(c('serial', { ports: [{ path: '/dev/ttyUSB0', granted: true, alias: 'scale', listed: true, manufacturer: 'FTDI' }, { path: '/dev/ttyS0', granted: false, listed: true }] }), [
    { id: '/dev/ttyUSB0', label: 'FTDI', alias: 'scale', granted: true },
    { id: '/dev/ttyS0', granted: false },
  ]);
  assert.deepEqual(c('printers', { printers: [{ id: 'q1', name: 'q1', granted: false, make_and_model: 'HP LaserJet', state: 'idle', reasons: [] }], spooler: 'cups', spooler_reachable: true }), [{ id: 'q1', label: 'HP LaserJet', granted: false }]);
  for (const [kind, key] of [['cameras', 'cameras'], ['microphones', 'microphones'], ['screens', 'screens']] as const) {
    assert.deepEqual(c(kind, { [key]: [{ id: '/dev/video0', label: 'HD Webcam', granted: true, alias: 'desk', backend: 'ffmpeg' }] }), [{ id: '/dev/video0', label: 'HD Webcam', alias: 'desk', granted: true }]);
  }
  assert.deepEqual(c('bluetooth', { peripherals: [{ id: 'aa11', name: 'Thermo', rssi: -50, services: [] }, { id: 'bb22', address: 'bb:22', rssi: -70, services: [] }], complete: true }), [
    { id: 'aa11', label: 'Thermo' },
    { id: 'bb22', label: 'bb:22' },
  ]);
  assert.deepEqual(c('serial', {}), [], 'an output without the list is none');
  assert.deepEqual(c('serial', { ports: [null, 3] }), []);
});
