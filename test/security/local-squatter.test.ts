/**
 * Issue 27, finding 3: another local user stands in for the agent's local endpoint. The squatter is a
 * real process of another uid (`nobody`, via `setpriv`) listening on loopback and printing every request
 * it gets. (1) A stale `endpoint.json` (the agent gone, its pid reused) names the squatter's port: the
 * documented commands refuse, and the squatter gets nothing. (2) The squatter holds the agent's configured
 * port before it starts: the agent listens on another port, says so (warn log, `status`), and the
 * documented commands reach the real agent; the squatter gets nothing. The defence is the listener-owner
 * check (`src/endpoint/listener-owner.ts`: /proc/net/tcp's uid of the LISTEN socket must be the owner of
 * `local-token`) before the token or any request goes out.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { cliRun, processStack, tempDir, until } from '../helpers/stack.js';
import { freePort } from '../helpers/net.js';


const SQUATTER = `
const http = require('node:http');
http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    console.log(JSON.stringify({ method: req.method, url: req.url, authorization: req.headers.authorization ?? null, body }));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(req.url === '/health' ? '{"status":"ok","version":"0.1.0"}' : '{"jsonrpc":"2.0","id":1,"result":{"added":[],"removed":[],"updated":[]}}');
  });
}).listen(Number(process.argv[1]), '127.0.0.1', () => console.log('listening'));
`;

/** The squatter, as uid nobody, on `port`; `seen()` is every request it received. */
async function squatter(port: number) {
  const child: ChildProcess = spawn('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', process.execPath, '-e', SQUATTER, String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  await until(() => out.includes('listening') || child.exitCode !== null, 10_000, 'the squatter listening');
  assert.ok(out.includes('listening'), `squatter did not start: ${err}`);
  return {
    pid: child.pid!,
    seen: () => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { method: string; url: string; authorization: string | null; body: string }),
    stop: () => child.kill('SIGKILL'),
  };
}

describe('another local user cannot stand in for the local endpoint', () => {
  const cleanups: (() => unknown)[] = [];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  test('a stale endpoint.json naming another user\'s port: status says not running, adapters refresh refuses, the squatter gets nothing', async () => {
    const port = await freePort();
    const sq = await squatter(port);
    cleanups.push(sq.stop);
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const data = join(dir, 'agent');
    mkdirSync(data, { mode: 0o700 });
    const token = 'lt_' + 'a'.repeat(40);
    writeFileSync(join(data, 'local-token'), token + '\n', { mode: 0o600 });
    // The agent is gone; its pid now belongs to the squatter (pid reuse), which listens on the recorded port.
    writeFileSync(join(data, 'endpoint.json'), JSON.stringify({ pid: sq.pid, http: `http://127.0.0.1:${port}`, version: '0.1.0' }), { mode: 0o600 });

    const status = await cliRun(['status', '--data-dir', data, '--json', '--bridge', 'http://127.0.0.1:9', '--token', 'rt_x', '--workspace', 'ws_x']);
    const agent = (JSON.parse(status.out) as { agent: { running: boolean } }).agent;
    assert.equal(agent.running, false, status.out);
    const refresh = await cliRun(['adapters', 'refresh', '--data-dir', data]);
    assert.notEqual(refresh.code, 0, `adapters refresh must refuse: ${refresh.out}`);
    const seen = sq.seen();
    assert.ok(!seen.some((r) => (r.authorization ?? '').includes(token) || r.body.includes(token)), `the squatter received the token: ${JSON.stringify(seen)}`);
    assert.deepEqual(seen, [], 'nothing at all was sent to the squatter');
  });

  test('the configured port taken by another user: the agent listens elsewhere and says so; commands reach the real agent, the squatter gets nothing', async () => {
    const port = await freePort();
    const sq = await squatter(port);
    cleanups.push(sq.stop);
    const s = await processStack({ agent: { local_endpoint: { host: '127.0.0.1', port, socket: false } } });
    cleanups.push(() => s.stop());
    const data = join(s.dir, 'agent');
    const ep = JSON.parse(readFileSync(join(data, 'endpoint.json'), 'utf8')) as { http: string; configured_port_taken?: number };
    assert.equal(ep.configured_port_taken, port);
    assert.notEqual(new URL(ep.http).port, String(port));
    assert.match(s.agentLog(), /configured local endpoint port is taken/);
    assert.match(s.agentLog(), /"level":40|"level":"warn"/);

    const status = await cliRun(['status', '--data-dir', data, '--bridge', s.url, '--token', s.tokens.runtime, '--workspace', 'ws_t'], { LANG: 'en_US.UTF-8' });
    assert.match(status.out, /agent: running/);
    assert.match(status.out, new RegExp(`configured local endpoint port ${port} was taken`));
    const refresh = await cliRun(['adapters', 'refresh', '--data-dir', data]);
    assert.equal(refresh.code, 0, refresh.err);
    assert.deepEqual(sq.seen(), [], 'nothing was sent to the squatter');
  });
});
