/**
 * The JavaScript adapters' host as the tray app ships it (scripts/build-adapter-host.mjs): one file that
 * runs with no node_modules anywhere near it. Built into a temporary folder outside the project, run by
 * this Node with the example adapter's folder as its working folder, and spoken to by the official MCP
 * SDK client over stdio: it lists the adapter's function and answers a call.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ROOT } from '../helpers/stack.js';
import { slow } from '../helpers/wait.js';

test('the bundled host serves an adapter with no node_modules beside it', { timeout: slow(120_000) }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aios-host-bundle-'));
  try {
    const { buildAdapterHost } = (await import(join(ROOT, 'scripts', 'build-adapter-host.mjs'))) as { buildAdapterHost(out: string): Promise<string> };
    const host = await buildAdapterHost(join(dir, 'host'));
    const adapter = join(dir, 'adapter');
    cpSync(join(ROOT, 'examples', 'hello-adapter', 'org.example.hello'), adapter, { recursive: true });
    const client = new Client({ name: 'bundle-test', version: '1.0.0' });
    const transport = new StdioClientTransport({ command: process.execPath, args: [host, 'index.mjs', '9.9.9'], cwd: adapter, env: { PATH: '/usr/bin:/bin', HOME: dir }, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['hello.greet'], stderr);
      const r = await client.callTool({ name: 'hello.greet', arguments: { name: 'Ada' } });
      assert.notEqual(r.isError, true, JSON.stringify(r));
      assert.match(JSON.stringify(r.content), /Hello, Ada!/);
    } finally {
      await client.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
