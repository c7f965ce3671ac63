/**
 * A running MCP adapter whose tools change (list_changed) goes through the registry's one path for a new
 * list, as a scan does: a new tool that clashes with a built-in makes the adapter unavailable and its code
 * is let go (its process stopped, its private copy removed); an adapter with no tools yet keeps running
 * through a rescan, so the tools it lists later arrive. The server is a small stdio JSON-RPC program this
 * test writes: it starts with no tools and adds `late` once the file `grow` appears in its data folder.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { AdapterRegistry } from '../../src/discovery/registry.js';
import { TrustStore } from '../../src/discovery/trust-store.js';
import { signAdapterDir } from '../../src/discovery/adapter-tools.js';
import type { CardSigningKey } from '../../src/protocol/card-sign.js';
import type { DescriptorInput } from '../../src/sdk/index.js';
import { tempDir } from '../helpers/stack.js';
import { until } from '../helpers/wait.js';

const ID = 'org.test.grows';
const SERVER = String.raw`
import { createInterface } from 'node:readline';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
const tools = [];
const grow = join(process.argv[2], 'grow');
const poll = setInterval(() => {
  if (!existsSync(grow)) return;
  clearInterval(poll);
  tools.push({ name: 'late', inputSchema: { type: 'object' } });
  send({ method: 'notifications/tools/list_changed' });
}, 20);
const rl = createInterface({ input: process.stdin });
rl.on('close', () => process.exit(0));
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') return send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'grows', version: '1.0.0' } } });
  if (m.method === 'tools/list') return send({ id: m.id, result: { tools } });
  if (m.id !== undefined) send({ id: m.id, result: {} });
});
`;

let root: string;
let adapters: string;
let trust: TrustStore;

before(async () => {
  root = tempDir('aios-reg-tools-');
  adapters = join(root, 'adapters');
  const dir = join(adapters, 'grows');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'server.mjs'), SERVER);
  const sha = createHash('sha256').update(readFileSync(process.execPath)).digest('hex');
  const mcp = { command: process.execPath, command_sha256: sha, args: ['server.mjs', '{data}'], prefix: 'grows' };
  writeFileSync(join(dir, 'tool.aios.yaml'), `tool:\n  id: ${ID}\n  name: Grows\n  version: 1.0.0\nmcp: ${JSON.stringify(mcp)}\n`);
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid: 'grows-1', alg: 'ES256' } as JWK;
  const key: CardSigningKey = { kid: 'grows-1', alg: 'ES256', privateKey, publicJwk };
  await signAdapterDir(dir, key);
  trust = TrustStore.of([publicJwk]);
});
after(() => rmSync(root, { recursive: true, force: true }));

/** A registry over the one adapter folder, with its own data folder; `builtinFn` is a built-in function id. */
async function registry(name: string, builtinFn?: string) {
  const data = join(root, name);
  const reg = new AdapterRegistry({ dirs: [adapters], desktopDirs: [], trust, dataDir: data, inferFromDesktop: false, watch: false, allowUnsandboxed: true });
  if (builtinFn) reg.addBuiltin({ id: 'org.test.builtin', name: 'Built in', version: '1.0.0' }, [{ id: builtinFn, name: 'Late' } as DescriptorInput]);
  await reg.start();
  const entry = reg.getAdapter(ID);
  assert.ok(entry?.status.available, JSON.stringify(entry?.status));
  assert.deepEqual(entry.functions, [], 'no tools at start');
  return { reg, data, grow: () => writeFileSync(join(data, 'adapter-data', ID, 'grow'), '') };
}

test('a new tool that clashes with a built-in makes the adapter unavailable and lets its code go', async () => {
  const { reg, data, grow } = await registry('clash', 'grows.late');
  try {
    const copies = () => readdirSync(join(data, 'adapter-code'));
    assert.equal(copies().length, 1, 'the running adapter has its private copy');
    grow();
    const refused = await until(() => (reg.getAdapter(ID)?.status.reason?.includes('already') ? reg.getAdapter(ID) : undefined), 20_000, 'the clash is seen');
    assert.equal(refused.status.available, false);
    assert.deepEqual(refused.functions, []);
    assert.equal(refused.dispose, undefined, 'the refused entry holds no code');
    // Released: the process stopped and its copy removed (the old path kept both until the next scan).
    await until(() => copies().length === 0 || undefined, 15_000, "the adapter's code is let go");
  } finally {
    await reg.stop();
  }
});

test('an adapter with no tools yet keeps running through a rescan, and the tools it lists later arrive', async () => {
  const { reg, grow } = await registry('rescan');
  try {
    // The registry used to count only entries with functions as live: a rescan (or the remote refresh
    // right after start) let this adapter's code go, and its later tools never came.
    await reg.refresh('local');
    assert.ok(reg.getAdapter(ID)?.status.available);
    grow();
    await until(() => reg.functions().some((f) => f.descriptor.id === 'grows.late') || undefined, 20_000, 'the later tool is listed');
  } finally {
    await reg.stop();
  }
});
