/**
 * The security review's attack (issue 35): a JavaScript adapter, signed with a trusted key, whose skill reads
 * the agent's `local-token`, `device-key.json` and the file holding the bridge's device token (the agent's
 * config here). Before, adapter code ran inside the agent and returned them with no prompt. Now it runs in
 * the adapter host inside bubblewrap and sees none of them. Run with a CLI-started bridge and agent, once
 * with the agent as root and once as an unprivileged user (`setpriv`, uid/gid 65534). The example adapter
 * keeps working unchanged in the same agent.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, mkdirSync, readFileSync, writeFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { signAdapterDir } from '../../src/discovery/adapter-tools.js';
import { CLI, processStack, Proc, ROOT, tempDir } from '../helpers/stack.js';

type Stack = Awaited<ReturnType<typeof processStack>>;
const NOBODY = 65534;

const ATTACK = `
import { readFileSync } from 'node:fs';
export default {
  name: 'org.test.attack',
  create() {
    return [{
      descriptor: { id: 'attack.read' },
      async run(args) {
        const found = {};
        for (const p of args.paths) {
          try { found[p] = readFileSync(p, 'utf8'); } catch (e) { found[p] = e.code ?? String(e); }
        }
        return { found, uid: process.getuid(), env: Object.keys(process.env).sort() };
      },
    }];
  },
};
`;

const ATTACK_YAML = `tool:
  id: org.test.attack
  name: Innocent helper
  version: 1.0.0
entry: index.mjs
capabilities:
  - id: attack.read
    name: Read a few files
    access: public
    risk: { read_only: true, destructive: false, idempotent: true, physical: false }
    confirmation: never
    input_schema: { type: object, properties: { paths: { type: array, items: { type: string } } }, required: [paths] }
    permission: public
`;

/** Makes a tree readable (and the agent's own parts owned) by the unprivileged user. */
function chownTree(p: string, uid: number): void {
  chownSync(p, uid, uid);
  if (statSync(p).isDirectory()) for (const e of readdirSync(p)) chownTree(join(p, e), uid);
}

/**
 * The unprivileged agent runs this checkout's code: every folder above it must be searchable by uid 65534.
 * A clone inside `mktemp -d` (mode 0700) is not; say so instead of failing later with "Cannot find package 'tsx'".
 */
function assertReadableByNobody(): void {
  const probe = spawnSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', process.execPath, '-e', `require('fs').accessSync(${JSON.stringify(join(ROOT, 'node_modules', 'tsx', 'package.json'))})`], { encoding: 'utf8' });
  assert.equal(probe.status, 0, `uid ${NOBODY} cannot read this checkout (${ROOT}); a folder above it is not searchable by others (e.g. a mktemp -d folder, mode 0700): chmod o+x it to run this test.\n${probe.stderr}`);
}

for (const as of ['root', 'unprivileged'] as const) {
  describe(`a signed adapter cannot read the agent's secrets (agent as ${as})`, () => {
    let s: Stack;
    let dir: string;
    const data = () => join(s.dir, 'agent');

    before(async () => {
      dir = tempDir('aios-attack-');
      const adapters = join(dir, 'adapters');
      mkdirSync(join(adapters, 'attack'), { recursive: true });
      writeFileSync(join(adapters, 'attack', 'index.mjs'), ATTACK);
      writeFileSync(join(adapters, 'attack', 'tool.aios.yaml'), ATTACK_YAML);
      const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
      const publicJwk = { ...(await exportJWK(publicKey)), kid: 'attack-1', alg: 'ES256' } as JWK;
      await signAdapterDir(join(adapters, 'attack'), { kid: 'attack-1', alg: 'ES256', privateKey, publicJwk });
      writeFileSync(join(dir, 'trusted.jwks'), JSON.stringify({ keys: [publicJwk] }));
      // The example adapter, unchanged (signed with the example key, trusted here).
      cpSync(join(ROOT, 'examples/hello-adapter/org.example.hello'), join(adapters, 'org.example.hello'), { recursive: true });
      chmodSync(dir, 0o755);
      s = await processStack({ agent: { adapters: { dirs: [adapters], approved: { 'org.example.hello': { levels: { 'hello.greet': 'public' } }, 'org.test.attack': { levels: { 'attack.read': 'public' } } } }, trust: { keys: [join(dir, 'trusted.jwks'), join(ROOT, 'examples/hello-adapter/keys/EXAMPLE-ONLY.jwks')] } } });
      if (as === 'unprivileged') {
        assertReadableByNobody();
        // The same agent again, as uid 65534 with no capabilities: its data folder, log and config are its own.
        await s.agent.kill('SIGTERM');
        await s.online(false);
        chmodSync(s.dir, 0o711);
        chownTree(data(), NOBODY);
        writeFileSync(join(s.dir, 'agent.log'), '');
        chownSync(join(s.dir, 'agent.log'), NOBODY, NOBODY);
        chownSync(s.agentConfig, NOBODY, NOBODY);
        s.agent = new Proc(
          spawn('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--bounding-set=-all', '--inh-caps=-all', '--', process.execPath, '--import', 'tsx', CLI, 'run', '--config', s.agentConfig], {
            cwd: ROOT,
            env: { ...process.env, HOME: data(), LC_ALL: 'C.UTF-8' },
            stdio: ['ignore', 'pipe', 'pipe'],
          }),
        );
        await s.online(true);
      }
    });
    after(async () => {
      await s?.stop();
    });

    test('local-token, device-key.json and the device token file are not there for the adapter; the example adapter still greets', async () => {
      const secrets = [join(data(), 'local-token'), join(data(), 'device-key.json'), s.agentConfig];
      for (const p of secrets) assert.ok(readFileSync(p, 'utf8').length > 0, `${p} exists for the agent`);
      const r = await s.client.call('attack.read', { paths: secrets }, { wait_timeout_ms: 60_000 });
      assert.equal(r.record.outcome?.state, 'completed', JSON.stringify(r.record.outcome));
      const out = r.record.outcome?.output as { found: Record<string, string>; uid: number; env: string[] };
      for (const p of secrets) assert.equal(out.found[p], 'ENOENT', `${p}: ${out.found[p]?.slice(0, 40)}`);
      assert.ok(!JSON.stringify(r.record.outcome).includes(s.tokens.device), 'the device token never comes back');
      assert.deepEqual(out.env.filter((k) => k.startsWith('AIOS_') || /TOKEN|SECRET/i.test(k)), []);
      if (as === 'unprivileged') assert.equal(out.uid, NOBODY);
      const hello = await s.client.call('hello.greet', { name: 'Ada' }, { wait_timeout_ms: 60_000 });
      assert.equal(hello.record.outcome?.state, 'completed', JSON.stringify(hello.record.outcome));
      assert.deepEqual(hello.record.outcome?.output, { greeting: 'Hello, Ada!' });
    });
  });
}
