/**
 * At most once under a stop storm with the bridge's `unknown` (protocol 1.2 §6.4/§6.8, issue 28): three
 * CLI-started agents are paused (SIGSTOP) across the bridge's deadline and resumed, again and again, while a
 * runtime submits 200 calls. Some pauses outlast the deadline while the heartbeat still holds the session
 * (`unknown/timeout`), some outlast the heartbeat (`unknown/device_offline`, invokes lost in a dead socket).
 * Afterwards: no call ran twice on its device (the ledger: each device's agent.log has one "call finished"
 * line per call it answered, and at most one per call id with a `duration_ms`, which only a call whose handler
 * started has), every call the bridge ended `unknown` was resolved by the device, and the bridge's record of
 * every call the device answered is what the device logged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { agentDoc, bridgeDoc, cli, ids, procReport, tempDir, tokens, until, type Proc } from '../helpers/stack.js';
import { BridgeHttpError, RuntimeClient } from '../../src/runtime-client/client.js';
import { slow } from '../helpers/wait.js';

type CallRecord = Awaited<ReturnType<RuntimeClient['getCall']>> & { resolved_from?: { state: string; at: string } };

const DEVICES = ['dev_s1', 'dev_s2', 'dev_s3'];
const CALLS = 200;
/** Heartbeat 4 s: a session holds for about 12 s of silence, past a 6 s deadline plus the 7 s cancel wait only for the longer pauses. */
const HEARTBEAT_MS = 4000;
/** Pauses, in turn: shorter than the deadline, past the deadline with the session held, past the heartbeat. */
const PAUSES_MS = [2500, 14_000, 20_000];

test('stop storm: 200 calls, 0 double executions, every bridge-issued unknown resolved after resume', { timeout: slow(300_000) }, async () => {
  const dir = tempDir('aios-storm-');
  const t = tokens();
  const deviceTokens = Object.fromEntries(DEVICES.map((d) => ['dt_' + randomBytes(12).toString('hex'), { ...ids, device_id: d }]));
  mkdirSync(join(dir, 'bridge'), { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'bridge.cfg.json'), JSON.stringify(bridgeDoc(dir, t, { heartbeat_ms: HEARTBEAT_MS, device_tokens: deviceTokens })));
  const bridge = cli(['bridge', '--config', join(dir, 'bridge.cfg.json')]);
  const agents = new Map<string, Proc>();
  let chaos = true;
  try {
    await until(() => existsSync(join(dir, 'bridge', 'bridge.json')), 20_000, 'bridge.json').catch((e: Error) => {
      throw new Error(`${e.message}\n${procReport('bridge', bridge)}`, { cause: e });
    });
    const url = (JSON.parse(readFileSync(join(dir, 'bridge', 'bridge.json'), 'utf8')) as { url: string }).url;
    const client = new RuntimeClient({ bridge_url: url, token: t.runtime, workspace_id: ids.workspace_id, device_id: DEVICES[0]! });
    for (const [token, id] of Object.entries(deviceTokens)) {
      const cfg = join(dir, `${id.device_id}.cfg.json`);
      writeFileSync(cfg, JSON.stringify(agentDoc(dir, url, { ...t, device: token }, {
        identity: { ...id, device_name: id.device_id },
        data_dir: join(dir, id.device_id),
        log: { level: 'info', file: join(dir, `${id.device_id}.log`) },
      })));
      agents.set(id.device_id, cli(['run', '--config', cfg]));
    }
    for (const d of DEVICES) {
      await until(async () => (await client.device(d))['online'] === true, 30_000, `${d} online`).catch((e: Error) => {
        throw new Error(`${e.message}\n${procReport(d, agents.get(d))}`, { cause: e });
      });
    }

    // Each device is paused and resumed in turn, offset from the others, until the runtime has submitted every call.
    const storms = DEVICES.map(async (d, i) => {
      const p = agents.get(d)!;
      await new Promise((r) => setTimeout(r, 1500 * i));
      for (let n = i; chaos; n++) {
        p.child.kill('SIGSTOP');
        await new Promise((r) => setTimeout(r, PAUSES_MS[n % PAUSES_MS.length]));
        p.child.kill('SIGCONT');
        await new Promise((r) => setTimeout(r, 1500));
      }
    });

    // The runtime: 200 calls, round robin, a few a second; a device that is offline right now is retried with the same call id.
    const submitted: { id: string; device: string }[] = [];
    for (let n = 0; n < CALLS; n++) {
      const device = DEVICES[n % DEVICES.length]!;
      const id = `storm-${n}`;
      for (;;) {
        try {
          await client.call('diagnostics.wait', { ms: 200, steps: 1 }, { device_id: device, call_id: id, timeout_ms: 1000, confirm_timeout_ms: 1, wait: false });
          break;
        } catch (e) {
          if (!(e instanceof BridgeHttpError) || e.error.type !== 'device_offline') throw e;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
      submitted.push({ id, device });
      await new Promise((r) => setTimeout(r, 150));
    }
    chaos = false;
    await Promise.all(storms);
    for (const p of agents.values()) p.child.kill('SIGCONT');

    // Every call finished, and none still in the bridge's own unknown.
    const pendingOrBridgeUnknown = (r: CallRecord) => !r.outcome || (r.state === 'unknown' && r.outcome.error?.details?.['source'] === 'bridge');
    const records = new Map<string, CallRecord>();
    await until(async () => {
      for (const { id } of submitted) {
        const known = records.get(id);
        if (known && !pendingOrBridgeUnknown(known)) continue;
        records.set(id, (await client.getCall(id)) as CallRecord);
      }
      return [...records.values()].every((r) => !pendingOrBridgeUnknown(r));
    }, 60_000, 'every call finished and every bridge unknown resolved').catch((e: Error) => {
      const left = [...records.values()].filter(pendingOrBridgeUnknown).map((r) => `${r.call_id} ${r.state} ${JSON.stringify(r.outcome?.error ?? null)}`);
      throw new Error(`${e.message}: ${left.length} left\n${left.slice(0, 10).join('\n')}`, { cause: e });
    });

    // The ledger: each device's "call finished" lines (one per run of a call), by call id.
    const ran = new Map<string, { state: string; duration_ms: number | null }[]>();
    await until(() => {
      ran.clear();
      for (const d of DEVICES) {
        for (const line of readFileSync(join(dir, `${d}.log`), 'utf8').split('\n')) {
          if (!line.includes('"call finished"')) continue;
          const l = JSON.parse(line) as { call_id: string; state: string; duration_ms: number | null };
          ran.set(l.call_id, [...(ran.get(l.call_id) ?? []), l]);
        }
      }
      // The log line is written just after the answer: wait until every outcome the bridge has from a run is logged.
      return [...records.values()].every((r) => ran.has(r.call_id) || r.outcome?.state === 'cancelled' || r.outcome?.state === 'expired');
    }, 20_000, 'the devices logged every call they ran');
    const twice = [...ran].filter(([, lines]) => lines.filter((l) => l.duration_ms !== null).length > 1);
    assert.deepEqual(twice.map(([id]) => id), [], 'no call ran twice');
    let resolved = 0;
    for (const r of records.values()) {
      const runs = ran.get(r.call_id);
      if (r.resolved_from) resolved++;
      if (runs) assert.equal(r.outcome?.state, runs.at(-1)!.state, `${r.call_id}: the bridge says what the device logged`);
      else assert.ok(r.outcome?.state === 'cancelled' || r.outcome?.state === 'expired', `${r.call_id} never ran on its device, yet ended ${r.outcome?.state}`);
    }
    assert.equal(records.size, CALLS);
    assert.ok(resolved > 0, 'the storm made the bridge give up on some calls, and the devices resolved them');
    const started = [...ran.values()].filter((lines) => lines.some((l) => l.duration_ms !== null)).length;
    process.stdout.write(`# storm: ${CALLS} calls, ${ran.size} answered by their device, ${started} of them ran (once), ${resolved} bridge unknowns resolved\n`);
  } finally {
    chaos = false;
    for (const p of agents.values()) {
      p.child.kill('SIGCONT');
      await p.kill('SIGKILL');
    }
    await bridge.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
