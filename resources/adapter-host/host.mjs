// The host process of a JavaScript adapter (issue 35): runs in the adapter's sandbox, imports the
// adapter's module (its verified copy is the working folder), and serves its functions over MCP on
// stdin/stdout with the MCP SDK's server. Adapter authors change nothing: `create(env)`, `run(args, ctx)`,
// `describe(args)` and `resources(args, { grants })` keep their meaning. Besides `tools/list` and
// `tools/call`, two custom methods carry what MCP has no word for:
//   org.aios/describe  { name, arguments, resources } → { text }       (the prompt's sentence)
//   org.aios/resources { name, arguments }            → { resources }  (what the call touches)
// Outputs travel as JSON text; a typed failure (`{ type, message }`, the SDK's fail()) as `isError` with
// `_meta["org.aios/error"]`. Plain JavaScript on purpose: node runs it directly, nothing is compiled.
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

const entry = process.argv[2];
const version = process.argv[3] ?? '0.0.0';
const log = (level) => (obj, msg) => process.stderr.write(JSON.stringify({ level, ...obj, msg }) + '\n');
const logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error'), child: () => logger };
const NO_GRANTS = Object.freeze({ list: () => [], find: () => undefined, on: () => undefined, off: () => undefined });

/** Why the adapter cannot be served, on the last line of stderr where the agent reads it; then exit. */
function refuse(code, detail) {
  process.stderr.write(`aios-adapter-host: ${code}${detail ? `: ${String(detail).split('\n')[0]}` : ''}\n`);
  process.exit(64);
}
let mod;
try {
  mod = await import(pathToFileURL(join(process.cwd(), entry)).href);
} catch (e) {
  refuse('load_failed', e?.message ?? e);
}
const handler = mod.default;
if (!handler || typeof handler !== 'object' || typeof handler.name !== 'string' || typeof handler.create !== 'function') refuse('no_handler');
if (handler.grantKinds?.length) refuse('grant_kinds');
const env = { grants: NO_GRANTS, options: {}, dataDir: process.env.HOME ?? process.cwd(), log: logger, appVersion: version, listFunctions: () => [] };
let created;
try {
  created = await handler.create(env);
} catch (e) {
  refuse('start_failed', e?.message ?? e);
}
const instance = Array.isArray(created) ? { functions: created } : created;
const byId = new Map(instance.functions.map((f) => [f.descriptor.id, f]));

/** A thrown value as a typed failure when it names a type; anything else says nothing private. */
function failure(e) {
  if (e && typeof e === 'object' && typeof e.type === 'string' && typeof e.message === 'string') {
    const out = { type: e.type, message: e.message };
    if (e.details && typeof e.details === 'object') out.details = e.details;
    if (typeof e.retryable === 'boolean') out.retryable = e.retryable;
    if (typeof e.declaredSideEffects === 'string') out.side_effects = e.declaredSideEffects;
    return out;
  }
  logger.error({ err: String(e?.message ?? e) }, 'the adapter threw an unexpected error');
  return { type: 'execution_failed', message: 'The function failed on the device.' };
}

function fn(name) {
  const f = byId.get(name);
  if (!f) throw new McpError(-32602, `Unknown tool ${name}`);
  return f;
}

const server = new Server({ name: `aios-adapter-host:${handler.name}`, version }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [...byId.keys()].map((name) => ({ name, inputSchema: { type: 'object' } })) }));
server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  const f = fn(req.params.name);
  const token = req.params._meta?.progressToken;
  const temps = [];
  const tempDir = async () => {
    const d = await mkdtemp('/tmp/call-');
    temps.push(d);
    return d;
  };
  const ctx = {
    callId: String(req.params._meta?.['org.aios/call_id'] ?? extra.requestId),
    functionId: req.params.name,
    signal: extra.signal,
    requester: undefined,
    log: logger,
    resources: req.params._meta?.['org.aios/resources'] ?? [],
    blobs: {
      uploadFile: () => Promise.reject({ type: 'execution_failed', message: 'Blobs are not available to adapters.' }),
      downloadToFile: () => Promise.reject({ type: 'execution_failed', message: 'Blobs are not available to adapters.' }),
    },
    progress: (p) => {
      if (token === undefined) return;
      void extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: p.progress ?? 0, ...(p.total !== undefined ? { total: p.total } : {}), ...(p.message ? { message: p.message } : {}) } }).catch(() => {});
    },
    commit: () => {},
    tempDir,
    tempFile: async (ext = '') => join(await tempDir(), `file${ext}`),
  };
  try {
    const out = await f.run(req.params.arguments ?? {}, ctx);
    return { content: [{ type: 'text', text: JSON.stringify(out ?? null) }] };
  } catch (e) {
    const err = failure(e);
    return { isError: true, content: [{ type: 'text', text: err.message }], _meta: { 'org.aios/error': err } };
  } finally {
    for (const d of temps) await rm(d, { recursive: true, force: true }).catch(() => {});
  }
});
server.fallbackRequestHandler = async (req) => {
  const p = req.params ?? {};
  if (req.method === 'org.aios/describe') {
    const f = fn(p.name);
    const said = f.describe ? await f.describe(p.arguments ?? {}, p.resources ?? []) : undefined;
    return { text: typeof said === 'string' ? said : null };
  }
  if (req.method === 'org.aios/resources') {
    const f = fn(p.name);
    try {
      return { resources: f.resources ? await f.resources(p.arguments ?? {}, { grants: NO_GRANTS }) : [] };
    } catch (e) {
      return { error: failure(e) };
    }
  }
  throw new McpError(-32601, `Method not found: ${req.method}`);
};

let closing = false;
const close = async () => {
  if (closing) return;
  closing = true;
  try {
    await instance.dispose?.();
  } catch (e) {
    logger.warn({ err: String(e) }, "the adapter's dispose failed");
  }
  process.exit(0);
};
process.stdin.on('end', close);
process.on('SIGTERM', close);
await server.connect(new StdioServerTransport());
