/**
 * The bridge loads the MCP SDK on the first MCP request, never at start (issue 33): in the module graph of
 * the whole CLI (`aios-device bridge` among its commands), `@modelcontextprotocol/sdk` is reached only by
 * dynamic `import()` from src/bridge/mcp/endpoint.ts; type-only imports are erased. esbuild resolves the graph.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { build } from 'esbuild';
import { ROOT } from '../helpers/stack.js';

test('@modelcontextprotocol/sdk is only imported dynamically, by the MCP endpoint', async () => {
  const r = await build({ entryPoints: [join(ROOT, 'src', 'cli', 'main.ts')], absWorkingDir: ROOT, bundle: true, platform: 'node', format: 'esm', packages: 'external', metafile: true, write: false, logLevel: 'silent' });
  const uses = Object.entries(r.metafile.inputs).flatMap(([file, i]) => i.imports.filter((x) => x.path.startsWith('@modelcontextprotocol/sdk')).map((x) => ({ file, path: x.path, kind: x.kind })));
  const eager = uses.filter((u) => u.kind !== 'dynamic-import');
  assert.deepEqual(eager, [], 'loaded at start');
  assert.ok(uses.some((u) => u.file === 'src/bridge/mcp/endpoint.ts' && u.path === '@modelcontextprotocol/sdk/server/streamableHttp.js'), JSON.stringify(uses));
});
