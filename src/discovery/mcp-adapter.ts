/**
 * An MCP server as an adapter (issue 35): a child process in the sandbox (sandbox.ts), the agent its MCP
 * client (the SDK's `Client` over stdio, loaded only when an adapter starts). Each tool becomes a device
 * function `<prefix>.<tool>` with the agent's whole call path in front of it; this module supplies `run`:
 * `tools/call`, progress notes from `notifications/progress`, `isError` → `execution_failed`, content blocks
 * as output (images and audio past 256 KiB through the blob store), and the process's life: a call aborted
 * (timeout, cancel) sends `notifications/cancelled`; MCP gives a server no way to say it stopped, so unless
 * the answer comes within the grace the process is killed, and every other call running in it ends
 * `unknown/execution_interrupted` (`failed` if it had not been sent). A process that ends is started again
 * with a backoff; tools are listed again at each start and on `notifications/tools/list_changed`.
 */
import { createHash } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { basename, isAbsolute, join, posix } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { ERRORS, WireError, type ErrorType, type SideEffects } from '../protocol/errors.js';
import { coreMessage } from '../i18n/index.js';
import { schemaValidator } from '../protocol/schema-validator.js';
import { BlobRefSchema, type CallContext, type DescriptorInput, type FunctionDefinition } from '../sdk/index.js';
import type { Logger } from '../base/logger.js';
import type { AdapterInfo, CardSkill, McpSpec } from '../protocol/manifest-schemas.js';
import type { PermissionLevel } from '../protocol/messages.js';
import { DEFAULT_SKILL_TIMEOUT_MAX_MS, DEFAULT_SKILL_TIMEOUT_MS, skillToDescriptor } from './card.js';
import { AdapterProblem } from './adapter-problem.js';
import { bubblewrapLaunch, probeBubblewrap, SANDBOX_HOST, unsandboxedLaunch, type Launch, type LaunchSpec } from './sandbox.js';
import { hostRuntime } from './host-runtime.js';
import { APP_VERSION } from '../version.js';


/**
 * How long a cancelled call's process may go on before it is killed: just past the agent's grace for a
 * handler to stop (ABORT_GRACE_MS, 5 s, src/agent/execution.ts), so the call's own outcome is answered first.
 */
const ABORT_GRACE_MS = 5000;

/** Content blocks larger than this (decoded) go through the blob store. */
export const INLINE_BLOB_LIMIT = 256 * 1024;

/** The output schema of a tool that publishes none: its content blocks. */
export const CONTENT_OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    content: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          type: { type: 'string' },
          text: { type: 'string' },
          mimeType: { type: 'string' },
          data: { type: 'string' },
          blob: BlobRefSchema,
        },
        required: ['type'],
      },
    },
  },
  required: ['content'],
  additionalProperties: false,
} as const;

/** Programs that fetch code at run time: never a command. */
const FETCHERS = new Set(['npx', 'npm', 'pnpm', 'pnpx', 'yarn', 'yarnpkg', 'bunx', 'bun', 'deno', 'uvx', 'pipx']);

/** How long to wait before starting a process again: 1 s, doubling, at most 60 s; reset after a minute up. */
const BACKOFF = { baseMs: 1000, capMs: 60_000, resetAfterMs: 60_000 };

const LEVELS: readonly PermissionLevel[] = ['public', 'low', 'medium', 'high', 'critical'];

/**
 * A third-party function's level: the higher of what its card claims and what the user or admin chose,
 * which is `high` unless someone chose otherwise. So the author's claim can raise it but never lower it,
 * and `critical` is never lowered.
 */
export function effectiveLevel(claimed: PermissionLevel | undefined, chosen: PermissionLevel | undefined): PermissionLevel {
  const c = LEVELS.indexOf(chosen ?? 'high');
  const a = claimed ? LEVELS.indexOf(claimed) : 0;
  return LEVELS[Math.max(a, c)]!;
}

/** A tool name as a function-id segment: lower case, anything else `_`, starting with a letter. */
export function toolSegment(name: string): string {
  const s = name.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  return /^[a-z]/.test(s) ? s : `t_${s}`;
}

/**
 * Checks the command before every start: not a program that fetches code, and either a file of the signed
 * folder or an absolute path whose SHA-256 the signed manifest records. Throws an {@link AdapterProblem}.
 */
export async function checkMcpCommand(spec: McpSpec, copyDir: string, signedFiles: ReadonlySet<string>): Promise<void> {
  const cmd = spec.command;
  if (FETCHERS.has(basename(cmd).replace(/\.(exe|cmd|bat)$/i, '').toLowerCase())) throw new AdapterProblem('core.adapter.mcp_fetcher', { command: cmd });
  if (!isAbsolute(cmd)) {
    const rel = posix.normalize(cmd.replace(/^\.\//, ''));
    if (rel.startsWith('..') || !signedFiles.has(rel)) throw new AdapterProblem('core.adapter.mcp_command_outside', { command: cmd });
    // The private copy's files are 0600: the command must be executable by its owner.
    await chmod(join(copyDir, ...rel.split('/')), 0o700);
    return;
  }
  if (!spec.command_sha256) throw new AdapterProblem('core.adapter.mcp_command_no_hash', { command: cmd });
  let bytes: Buffer;
  try {
    bytes = await readFile(cmd);
  } catch (e) {
    throw new AdapterProblem('core.adapter.mcp_command_unreadable', { command: cmd, detail: (e as Error).message }, undefined, { cause: e });
  }
  if (createHash('sha256').update(bytes).digest('hex') !== spec.command_sha256) throw new AdapterProblem('core.adapter.mcp_command_hash', { command: cmd });
}

/** What an MCP adapter needs. */
export interface McpAdapterOptions {
  id: string;
  name: string;
  version: string;
  spec: McpSpec;
  /** The verified private copy (the process's working folder). */
  codeDir: string;
  /** Files the signature covers (relative posix paths). */
  signedFiles: ReadonlySet<string>;
  /** The adapter's own work folder (exists, 0700). */
  dataDir: string;
  /** Run without bubblewrap where it cannot run (admin config `adapters.unsandboxed: allow`). */
  allowUnsandboxed: boolean;
  /** A function's effective level from the level its card claims (none for an MCP tool): see {@link effectiveLevel}. */
  level: (fn: string, claimed: PermissionLevel | undefined) => PermissionLevel;
  log: Logger;
  /**
   * A JavaScript adapter (`entry` + signed skills) served by the project's host process over MCP instead of
   * a server of its own: the card's skills are the functions, the host's tools their implementations.
   */
  host?: { entry: string; skills: readonly CardSkill[]; adapter: Pick<AdapterInfo, 'version'> };
}

/** One running process and the calls sent to it. */
interface Generation {
  client: Client;
  transport: StdioClientTransport;
  ended: boolean;
  /** Settles when the process is gone. */
  closed: Promise<void>;
  /** Calls whose `tools/call` went out on this process, each with how to end it. */
  running: Set<(e: WireError) => void>;
}

/** A running MCP adapter: its functions now, and when they change. */
export class McpAdapter {
  private gen: Generation | undefined;
  private starting: Promise<Generation> | undefined;
  private stopped = false;
  private failures = 0;
  private lastStart = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private tools = new Map<string, Tool>();
  private fns: FunctionDefinition<never, unknown>[] = [];
  /** Whether the tools were listed once (the start); later listings report changes. */
  private listed = false;
  /** Told when the tools changed (list_changed, or another list after a restart). */
  onChange: ((fns: FunctionDefinition<never, unknown>[]) => void) | undefined;
  /** Whether the process runs under bubblewrap (known after the first start). */
  sandboxed = false;
  private readonly log: Logger;

  constructor(private readonly o: McpAdapterOptions) {
    this.log = o.log.child({ adapter: o.id });
  }

  /** Starts the process and lists its tools; throws an {@link AdapterProblem} when it cannot. */
  async start(): Promise<FunctionDefinition<never, unknown>[]> {
    await this.ensure();
    return this.fns;
  }

  functions(): FunctionDefinition<never, unknown>[] {
    return this.fns;
  }

  /** Stops the process (unload, agent stop); calls running in it end interrupted. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    const g = this.gen ?? (await this.starting?.catch(() => undefined));
    if (g) await this.end(g, 'stop');
  }

  private async launch(): Promise<Launch> {
    const host = this.o.host;
    // The host's Node.js and copy (src/discovery/host-runtime.ts): not the adapter's code.
    const rt = host ? await hostRuntime() : undefined;
    const spec: LaunchSpec = host && rt
      ? {
          codeDir: this.o.codeDir,
          dataDir: this.o.dataDir,
          command: rt.node,
          args: [`${SANDBOX_HOST}/host.mjs`, host.entry, APP_VERSION],
          network: false,
          host: { dir: rt.dir, ...(rt.nodeModules ? { nodeModules: rt.nodeModules } : {}) },
        }
      : { codeDir: this.o.codeDir, dataDir: this.o.dataDir, command: this.o.spec.command, args: this.o.spec.args ?? [], network: this.o.spec.network === true, ...(this.o.spec.env ? { env: this.o.spec.env } : {}) };
    const probe = await probeBubblewrap();
    if ('bwrap' in probe) return bubblewrapLaunch(probe.bwrap, spec);
    if (!this.o.allowUnsandboxed) throw new AdapterProblem('core.adapter.no_sandbox', { detail: probe.reason });
    this.log.warn({ reason: probe.reason }, 'MCP adapter runs without a sandbox (adapters.unsandboxed: allow)');
    return unsandboxedLaunch(spec);
  }

  /** The live process, started if needed (one start at a time). */
  private ensure(): Promise<Generation> {
    if (this.gen && !this.gen.ended) return Promise.resolve(this.gen);
    if (this.stopped) return Promise.reject(new WireError('device_unavailable', `Adapter ${this.o.id} is stopped.`, { details: { adapter: this.o.id } }));
    this.starting ??= this.spawn().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async spawn(): Promise<Generation> {
    if (!this.o.host) await checkMcpCommand(this.o.spec, this.o.codeDir, this.o.signedFiles);
    const launch = await this.launch();
    this.sandboxed = launch.sandboxed;
    // Loaded only now: an agent without MCP adapters never loads the SDK.
    const [{ Client }, { StdioClientTransport }, types] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/stdio.js'),
      import('@modelcontextprotocol/sdk/types.js'),
    ]);
    const transport = new StdioClientTransport({ command: launch.command, args: launch.args, env: launch.env, cwd: launch.cwd, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (d: Buffer) => {
      const text = d.toString('utf8');
      stderr = (stderr + text).slice(-2000);
      for (const line of text.split('\n')) if (line.trim()) this.log.debug({ stderr: line.slice(0, 500) }, 'MCP adapter stderr');
    });
    const client = new Client({ name: 'aios-device', version: APP_VERSION }, { capabilities: {} });
    let closedResolve!: () => void;
    const g: Generation = { client, transport, ended: false, closed: new Promise((r) => (closedResolve = r)), running: new Set() };
    client.onclose = () => {
      closedResolve();
      if (!g.ended) void this.end(g, 'crash');
    };
    client.onerror = (e) => this.log.debug({ err: e.message }, 'MCP adapter transport error');
    client.setNotificationHandler(types.ToolListChangedNotificationSchema, () => {
      if (this.gen === g) void this.relist(g).catch((e: unknown) => this.log.warn({ err: String(e) }, 'MCP adapter tools could not be listed again'));
    });
    try {
      await client.connect(transport, { timeout: 30_000 });
      this.gen = g;
      this.lastStart = Date.now();
      await this.relist(g);
    } catch (e) {
      g.ended = true;
      await transport.close().catch(() => undefined);
      if (e instanceof AdapterProblem) throw e;
      // The host says why it could not serve a JavaScript adapter: the reasons the in-process loader gave.
      const said = this.o.host ? /aios-adapter-host: (load_failed|no_handler|grant_kinds|start_failed)(?:: (.*))?/.exec(stderr) : null;
      if (said) throw new AdapterProblem(`core.adapter.${said[1] as 'load_failed' | 'no_handler' | 'grant_kinds' | 'start_failed'}`, said[2] !== undefined ? { detail: said[2] } : undefined, undefined, { cause: e });
      const detail = `${(e as Error).message}${stderr.trim() ? ` (stderr: ${stderr.trim().split('\n').slice(-1)[0]!.slice(0, 300)})` : ''}`;
      throw new AdapterProblem('core.adapter.mcp_start_failed', { detail }, undefined, { cause: e });
    }
    this.log.info({ tools: this.tools.size, sandboxed: launch.sandboxed }, 'MCP adapter started');
    return g;
  }

  /** Lists the tools (all pages) and rebuilds the functions; tells `onChange` when they differ. */
  private async relist(g: Generation): Promise<void> {
    const { ListToolsResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await g.client.request({ method: 'tools/list', params: cursor ? { cursor } : {} }, ListToolsResultSchema, { timeout: 30_000 });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    const before = JSON.stringify([...this.tools.values()]);
    const fns = this.build(tools);
    this.tools = new Map(tools.map((t) => [t.name, t]));
    // The first listing is the adapter's start (the registry reads `fns` then); every later one, a
    // list_changed or a restart, tells the registry when the tools differ, from none to some as well.
    const changed = this.listed && before !== JSON.stringify(tools);
    this.listed = true;
    this.fns = fns;
    if (changed) this.onChange?.(fns);
  }

  /** Tools → functions; a name clash or a schema that does not compile refuses the adapter. */
  private build(tools: readonly Tool[]): FunctionDefinition<never, unknown>[] {
    if (this.o.host) return this.buildHosted(tools, this.o.host);
    const byId = new Map<string, string>();
    const out: FunctionDefinition<never, unknown>[] = [];
    for (const tool of tools) {
      const id = `${this.o.spec.prefix}.${toolSegment(tool.name)}`;
      const other = byId.get(id);
      if (other !== undefined) throw new AdapterProblem('core.adapter.mcp_tool_clash', { a: other, b: tool.name, fn: id });
      byId.set(id, tool.name);
      for (const s of [tool.inputSchema, tool.outputSchema]) {
        if (!s) continue;
        try {
          schemaValidator.compile(s);
        } catch (e) {
          throw new AdapterProblem('core.adapter.mcp_bad_tool', { tool: tool.name, detail: (e as Error).message }, undefined, { cause: e });
        }
      }
      out.push(this.functionOf(id, tool));
    }
    return out;
  }

  private functionOf(id: string, tool: Tool): FunctionDefinition<never, unknown> {
    const a = tool.annotations;
    // MCP's defaults: not read-only, destructive, not idempotent. A tool without annotations is destructive.
    const readOnly = a?.readOnlyHint === true;
    const descriptor: DescriptorInput = {
      id,
      name: tool.title ?? a?.title ?? tool.name,
      description: tool.description ?? '',
      version: this.o.version,
      capability_type: 'api',
      access: 'restricted',
      permission_level: this.o.level(id, undefined),
      confirmation: 'policy',
      risk: { read_only: readOnly, destructive: !readOnly && a?.destructiveHint !== false, idempotent: a?.idempotentHint === true, physical: false },
      // As published (a draft-07 `$schema` included): descriptor_hash covers what the server sent.
      input_schema: tool.inputSchema as Record<string, unknown>,
      output_schema: (tool.outputSchema as Record<string, unknown> | undefined) ?? (CONTENT_OUTPUT_SCHEMA as unknown as Record<string, unknown>),
      timeout_ms_default: DEFAULT_SKILL_TIMEOUT_MS,
      timeout_ms_max: DEFAULT_SKILL_TIMEOUT_MAX_MS,
      cancellable: true,
      locks: [],
    };
    return {
      descriptor,
      describe: () => coreMessage('core.adapter.mcp_generic', { tool: tool.name, adapter: this.o.name }),
      run: (args, ctx) => this.call(tool, args as Record<string, unknown>, ctx),
    };
  }

  /** A JavaScript adapter's functions: the signed card's skills, each implemented by the host's tool of that id. */
  private buildHosted(tools: readonly Tool[], host: NonNullable<McpAdapterOptions['host']>): FunctionDefinition<never, unknown>[] {
    const names = new Set(tools.map((t) => t.name));
    const missing = host.skills.find((s) => !names.has(s.id));
    if (missing) throw new AdapterProblem('core.adapter.not_implemented', { skill: missing.id });
    return host.skills.map((skill) => {
      const tool: Tool = { name: skill.id, inputSchema: { type: 'object' } };
      const descriptor = { ...skillToDescriptor(skill, host.adapter), permission_level: this.o.level(skill.id, skill.permission_level) };
      return {
        descriptor,
        describe: async (args, resources) => {
          const r = (await this.custom('org.aios/describe', { name: skill.id, arguments: args, resources })) as { text?: unknown };
          return typeof r.text === 'string' ? r.text : coreMessage('core.call.generic', { name: descriptor.name });
        },
        resources: async (args) => {
          const r = (await this.custom('org.aios/resources', { name: skill.id, arguments: args })) as { resources?: unknown; error?: unknown };
          if (r.error) throw typedError(r.error);
          return Array.isArray(r.resources) ? r.resources : [];
        },
        run: (args, ctx) => this.call(tool, args as Record<string, unknown>, ctx),
      } satisfies FunctionDefinition<never, unknown>;
    });
  }

  /** A custom request (`org.aios/…`) to the host. */
  private async custom(method: string, params: Record<string, unknown>): Promise<unknown> {
    const [g, { ResultSchema }] = await Promise.all([this.ensure(), import('@modelcontextprotocol/sdk/types.js')]);
    return g.client.request({ method, params }, ResultSchema, { timeout: 30_000 });
  }

  /** One `tools/call` with the call's abort, progress and the process's life around it. */
  private async call(tool: Tool, args: Record<string, unknown>, ctx: CallContext): Promise<unknown> {
    let g: Generation;
    try {
      g = await this.ensure();
    } catch (e) {
      if (e instanceof WireError) throw e;
      throw new WireError('device_unavailable', `Adapter ${this.o.id} could not start: ${(e as Error).message}`, { details: { adapter: this.o.id, reason: 'adapter_not_running' } });
    }
    if (ctx.signal.aborted) throw new WireError('execution_interrupted', 'The call was stopped before it was sent to the adapter.');
    const { CallToolResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const sdkAbort = new AbortController();
    return new Promise<unknown>((resolve, reject) => {
      let done = false;
      let killTimer: NodeJS.Timeout | undefined;
      const finish = (f: () => void) => {
        if (done) return;
        done = true;
        clearTimeout(killTimer);
        g.running.delete(interrupt);
        ctx.signal.removeEventListener('abort', onAbort);
        f();
      };
      // The process ended under this call.
      const interrupt = (e: WireError) => finish(() => reject(e));
      g.running.add(interrupt);
      const onAbort = () => {
        // The SDK sends notifications/cancelled; the server cannot say it stopped, so after the grace it goes.
        sdkAbort.abort(ctx.signal.reason);
        killTimer = setTimeout(() => {
          this.log.warn({ call_id: ctx.callId, tool: tool.name }, 'MCP adapter did not end a cancelled call within the grace; its process is stopped');
          void this.end(g, 'kill', interrupt);
          finish(() => reject(new WireError('execution_interrupted', 'The adapter process was stopped after the call was cancelled.', { sideEffects: 'possible' })));
        }, ABORT_GRACE_MS + 200).unref();
      };
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      g.client
        .request({ method: 'tools/call', params: { name: tool.name, arguments: args, ...(this.o.host ? { _meta: { 'org.aios/call_id': ctx.callId, 'org.aios/resources': ctx.resources } } : {}) } }, CallToolResultSchema, {
          signal: sdkAbort.signal,
          // The agent's own budget ends the call (its signal); the SDK's timer only stops a wait nobody ends.
          timeout: DEFAULT_SKILL_TIMEOUT_MAX_MS + 4 * ABORT_GRACE_MS,
          onprogress: (p) => ctx.progress({ progress: p.progress, ...(p.total !== undefined ? { total: p.total } : {}), ...(p.message ? { message: p.message } : {}) }),
        })
        .then(
          async (result) => {
            if (sdkAbort.signal.aborted) return; // answered after the cancel: the kill timer decides
            try {
              const out = await this.output(tool, result, ctx);
              finish(() => resolve(out));
            } catch (e) {
              finish(() => reject(e));
            }
          },
          (e: unknown) => {
            if (sdkAbort.signal.aborted) return;
            if (g.ended || !this.gen || this.gen !== g) return; // end() interrupts it
            finish(() => reject(new WireError('execution_failed', `The adapter did not answer the call: ${(e as Error).message}`, { sideEffects: 'possible' })));
          },
        );
    });
  }

  /** A tools/call result as the function's output. */
  private async output(tool: Tool, r: CallToolResult, ctx: CallContext): Promise<unknown> {
    if (this.o.host) {
      // The host's own convention: a typed failure in _meta, the output as JSON text.
      if (r.isError) throw typedError(r._meta?.['org.aios/error']);
      const first = r.content[0];
      return first?.type === 'text' ? (JSON.parse(first.text) as unknown) : undefined;
    }
    if (r.isError) {
      const text = r.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n').slice(0, 2000);
      throw new WireError('execution_failed', text || `Tool ${tool.name} reported an error.`, { sideEffects: 'possible', details: { adapter: this.o.id, tool: tool.name } });
    }
    if (tool.outputSchema) return r.structuredContent;
    const content: Record<string, unknown>[] = [];
    for (const b of r.content) {
      if ((b.type === 'image' || b.type === 'audio') && typeof b.data === 'string') {
        const bytes = Buffer.from(b.data, 'base64');
        if (bytes.length > INLINE_BLOB_LIMIT) {
          const file = await ctx.tempFile();
          await writeFile(file, bytes, { mode: 0o600 });
          content.push({ type: b.type, mimeType: b.mimeType, blob: await ctx.blobs.uploadFile(file, b.mimeType, ctx.signal) });
          continue;
        }
      }
      content.push(b as Record<string, unknown>);
    }
    return { content };
  }

  /**
   * Ends a process: `stop` (unload), `crash` (it ended by itself) or `kill` (a cancelled call did not end).
   * Calls running in it end `execution_interrupted` (side effects possible: `unknown`), except `spare`,
   * which its caller ends. After a crash or kill, a new process starts after the backoff.
   */
  private async end(g: Generation, why: 'stop' | 'crash' | 'kill', spare?: (e: WireError) => void): Promise<void> {
    if (g.ended) return;
    g.ended = true;
    if (this.gen === g) this.gen = undefined;
    const err = new WireError('execution_interrupted', why === 'stop' ? 'The adapter was stopped while this call was running.' : 'The adapter process ended while this call was running.', { sideEffects: 'possible', details: { adapter: this.o.id } });
    for (const r of [...g.running]) if (r !== spare) r(err);
    g.running.clear();
    if (why === 'kill' && g.transport.pid) {
      try {
        process.kill(g.transport.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (why !== 'crash') await g.transport.close().catch(() => undefined);
    if (why === 'crash') this.log.warn({}, 'MCP adapter process ended');
    if (this.stopped || why === 'stop') return;
    if (Date.now() - this.lastStart > BACKOFF.resetAfterMs) this.failures = 0;
    const delay = Math.min(BACKOFF.capMs, BACKOFF.baseMs * 2 ** this.failures++);
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      if (this.stopped || this.gen) return;
      this.ensure().catch((e: unknown) => {
        this.log.warn({ err: String((e as Error).message ?? e) }, 'MCP adapter could not start again');
        // Try again later, with a longer wait.
        if (!this.stopped) void this.end({ ...g, ended: false, running: new Set() }, 'crash');
      });
    }, delay);
    this.restartTimer.unref();
  }
}

/** A failure the adapter host reports (`{ type, message, details?, retryable?, side_effects? }`) as a WireError. */
function typedError(v: unknown): WireError {
  const e = (v ?? {}) as { type?: unknown; message?: unknown; details?: unknown; retryable?: unknown; side_effects?: unknown };
  const message = typeof e.message === 'string' ? e.message.slice(0, 2000) : 'The function failed on the device.';
  if (typeof e.type !== 'string' || !(e.type in ERRORS)) return new WireError('execution_failed', message, { sideEffects: 'possible' });
  const opts: { details?: Record<string, unknown>; retryable?: boolean; sideEffects?: SideEffects } = {};
  if (e.details && typeof e.details === 'object') opts.details = e.details as Record<string, unknown>;
  if (typeof e.retryable === 'boolean') opts.retryable = e.retryable;
  if (e.side_effects === 'none' || e.side_effects === 'possible') opts.sideEffects = e.side_effects;
  return new WireError(e.type as ErrorType, message, opts);
}
