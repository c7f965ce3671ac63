/**
 * The MCP baseline: the official TypeScript SDK's client calls an equivalent no-op tool on an MCP server
 * in a child process over stdio. Nothing is journalled on that path.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ECHO_VALUE } from './agent-roundtrip.js';
import { benchFile, loaderFor } from './child.js';
import type { BenchTarget } from './stats.js';

/** Opens the MCP stdio target: spawns the server and connects the SDK client; `child`: node flags and environment for the server. */
export async function openMcpStdio(child: { nodeArgs?: string[]; env?: Record<string, string> } = {}): Promise<BenchTarget> {
  const server = benchFile('mcp-server');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [...(child.nodeArgs ?? []), ...loaderFor(server), server],
    stderr: 'inherit',
    ...(child.env ? { env: { ...(process.env as Record<string, string>), ...child.env } } : {}),
  });
  const client = new Client({ name: 'aios-bench', version: '1.0.0' });
  await client.connect(transport);
  return {
    name: 'MCP SDK over stdio',
    async call() {
      const r = await client.callTool({ name: 'echo', arguments: { value: ECHO_VALUE } });
      if ((r.structuredContent as { value?: unknown } | undefined)?.value !== ECHO_VALUE) throw new Error('the MCP echo tool did not echo');
      return r;
    },
    close: () => client.close(),
  };
}
