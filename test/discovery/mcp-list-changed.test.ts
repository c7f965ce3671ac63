/**
 * An MCP adapter whose server starts with no tools and adds one later (list_changed) tells the registry: the
 * first listing is the start, every later one reports a change, from none to some as well. The server is a
 * small stdio JSON-RPC program this test writes (no MCP server we did not write starts empty), run by the
 * real McpAdapter under the sandbox this machine has (bubblewrap, else unsandboxed as the admin may allow).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { McpAdapter } from '../../src/discovery/mcp-adapter.js';
import { silentLogger } from '../../src/base/logger.js';
import type { FunctionDefinition } from '../../src/sdk/index.js';
import { tempDir } from '../helpers/stack.js';
import { until } from '../helpers/wait.js';

const SERVER = String.raw`
import { createInterface } from 'node:readline';
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
const tools = [];
createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.method === 'initialize') return send({ id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: { listChanged: true } }, serverInfo: { name: 'empty-first', version: '1.0.0' } } });
  if (m.method === 'tools/list') {
    send({ id: m.id, result: { tools } });
    // After the first listing, a tool appears and the server says so.
    if (!tools.length) setTimeout(() => { tools.push({ name: 'late', inputSchema: { type: 'object' } }); send({ method: 'notifications/tools/list_changed' }); }, 50);
    return;
  }
  if (m.id !== undefined) send({ id: m.id, result: {} });
});
`;

test('a server that starts with no tools and adds one later: the adapter reports the change', async () => {
  const dir = tempDir('aios-mcp-empty-');
  const code = join(dir, 'code');
  const data = join(dir, 'data');
  mkdirSync(code);
  mkdirSync(data, { mode: 0o700 });
  writeFileSync(join(code, 'server.mjs'), SERVER);
  const changes: FunctionDefinition<never, unknown>[][] = [];
  const a = new McpAdapter({
    id: 'org.test.empty',
    name: 'Empty first',
    version: '1.0.0',
    spec: { command: process.execPath, command_sha256: createHash('sha256').update(readFileSync(process.execPath)).digest('hex'), args: ['server.mjs'], prefix: 'empty' },
    codeDir: code,
    signedFiles: new Set(['server.mjs']),
    dataDir: data,
    allowUnsandboxed: true,
    level: () => 'high',
    log: silentLogger(),
  });
  a.onChange = (fns) => changes.push(fns);
  try {
    assert.deepEqual((await a.start()).map((f) => f.descriptor.id), [], 'no tools at start');
    const later = await until(() => changes.at(-1), 20_000, 'the change after list_changed');
    assert.deepEqual(later.map((f) => f.descriptor.id), ['empty.late']);
  } finally {
    await a.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
