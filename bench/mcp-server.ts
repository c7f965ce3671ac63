/**
 * The MCP comparison's server: an MCP server over stdio (the official TypeScript SDK) with one no-op
 * tool equivalent to `diagnostics.echo` (input and output schemas, returns its argument).
 * Spawned by bench/mcp-stdio.ts through StdioClientTransport; stdout is the protocol channel.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'aios-bench-echo', version: '1.0.0' });
server.registerTool(
  'echo',
  {
    description: 'Returns its argument unchanged.',
    inputSchema: { value: z.unknown() },
    outputSchema: { value: z.unknown() },
  },
  ({ value }) => ({ content: [{ type: 'text', text: JSON.stringify({ value }) }], structuredContent: { value } }),
);
await server.connect(new StdioServerTransport());
