/**
 * The `aios/registry.*` methods (PROTOCOL.md §7.4) over the adapter catalogue, for the local endpoint
 * (`addMethods`) and the bridge session: search, info, refresh, remote adapters, approvals, and the
 * subscribers of `aios/notification.tools_changed`. Params are checked (registry-methods.ts) before a method
 * runs.
 */
import { randomUUID } from 'node:crypto';
import type { PermissionLevel, ToolsChanged } from '../protocol/messages.js';
import { RPC, RpcError } from '../protocol/errors.js';
import type { RpcContext, RpcMethod } from '../protocol/rpc-methods.js';
import { processRunning } from './desktop-entries.js';
import type { AdapterStatus } from './local-adapter.js';
import { AdapterProblem, renderProblem, type ProblemMessage } from './adapter-problem.js';
import type { AdapterEntry, PendingAdapter, RegistryChange } from './adapter-entry.js';
import {
  AddRemoteParams, ApproveParams, checkParams, InfoParams, PendingParams, RefreshParams, REGISTRY_METHODS, RemoveRemoteParams, SearchParams,
  SubscribeParams, UnsubscribeParams, type RefreshScope, type SubscribeEvent,
} from './registry-methods.js';

/** What the methods ask of the catalogue (the AdapterRegistry). */
export interface RegistryCatalogue {
  listAdapters(): AdapterEntry[];
  getAdapter(id: string): AdapterEntry | undefined;
  refresh(scope: RefreshScope): Promise<RegistryChange['adapters']>;
  addRemote(url: string, ca?: string): Promise<AdapterEntry>;
  removeRemote(id: string): Promise<boolean>;
  pendingAdapters(): PendingAdapter[];
  approve(id: string, levels: Record<string, PermissionLevel>): Promise<void>;
  /** Why the person's approvals file cannot be used, when it cannot. */
  approvalsProblem(): ProblemMessage | undefined;
}

/** An AdapterProblem as the wire's invalid params: its English reason, and its catalogue message for the CLI to say in its user's language. */
function invalidParams(err: Error): RpcError {
  return new RpcError(RPC.invalid_params, err.message, err instanceof AdapterProblem ? { reason_message: err.said } : undefined);
}

/** The methods, and the subscribers they serve. */
export class RegistryRpc {
  private readonly subscribers = new Map<string, { events: Set<SubscribeEvent>; notify: (m: string, p: unknown) => void }>();

  constructor(private readonly catalogue: RegistryCatalogue) {}

  /** The `aios/registry.*` methods by wire name. */
  methods(): Record<string, RpcMethod> {
    const c = this.catalogue;
    return {
      [REGISTRY_METHODS.search]: async (params) => this.search(checkParams(SearchParams, params)),
      [REGISTRY_METHODS.info]: async (params) => this.info(checkParams(InfoParams, params).adapter_id),
      [REGISTRY_METHODS.refresh]: async (params) => c.refresh(checkParams(RefreshParams, params).scope ?? 'all'),
      [REGISTRY_METHODS.subscribe]: async (params, ctx) => this.subscribe(checkParams(SubscribeParams, params).events, ctx),
      [REGISTRY_METHODS.unsubscribe]: async (params) => {
        this.subscribers.delete(checkParams(UnsubscribeParams, params).subscription_id);
        return {};
      },
      [REGISTRY_METHODS.addRemote]: async (params) => {
        const p = checkParams(AddRemoteParams, params);
        const e = await c.addRemote(p.url, p.ca).catch((err: Error) => {
          throw invalidParams(err);
        });
        return this.info(e.id);
      },
      [REGISTRY_METHODS.removeRemote]: async (params) => ({ removed: await c.removeRemote(checkParams(RemoveRemoteParams, params).adapter_id) }),
      [REGISTRY_METHODS.pending]: async (params) => {
        checkParams(PendingParams, params);
        const problem = c.approvalsProblem();
        return { adapters: c.pendingAdapters(), ...(problem && { approvals_problem: renderProblem(problem, 'en'), approvals_problem_message: problem }) };
      },
      [REGISTRY_METHODS.approve]: async (params) => {
        const p = checkParams(ApproveParams, params);
        await c.approve(p.adapter_id, p.levels ?? {}).catch((err: Error) => {
          throw invalidParams(err);
        });
        return this.info(p.adapter_id);
      },
    };
  }

  /**
   * Sends a tools_changed notification to local subscribers (filtered by the events they asked for). The agent
   * calls it with the same params it sends to the bridge, so the revision is the one of §4.
   */
  publish(params: ToolsChanged): void {
    for (const [id, s] of this.subscribers) {
      const p = {
        revision: params.revision,
        added: s.events.has('added') ? params.added : [],
        removed: s.events.has('removed') ? params.removed : [],
        updated: s.events.has('updated') ? params.updated : [],
      };
      if (!p.added.length && !p.removed.length && !p.updated.length) continue;
      try {
        s.notify('aios/notification.tools_changed', p);
      } catch {
        this.subscribers.delete(id);
      }
    }
  }

  /** Drops every subscriber (the registry stopping). */
  close(): void {
    this.subscribers.clear();
  }

  private search(p: { query?: string; type?: string; capabilities?: string[]; limit?: number; cursor?: string }) {
    const q = p.query?.toLowerCase();
    const matches = this.catalogue.listAdapters().filter((e) => {
      const skills = e.card.skills;
      if (q) {
        const hay = [e.id, e.card.adapter.name, e.card.adapter.description ?? '', ...skills.flatMap((s) => [s.id, s.name, s.description ?? ''])].join('\n').toLowerCase();
        if (!hay.includes(q)) return false;
      }
      // `type` matches a skill's capability_type or the adapter's kind (builtin, local, remote, inferred).
      if (p.type && p.type !== e.kind && !skills.some((s) => (s.capability_type ?? 'api') === p.type)) return false;
      const caps = e.card.capabilities as Record<string, boolean | undefined>;
      if (p.capabilities?.some((c) => caps[c] !== true)) return false;
      return true;
    });
    const start = Number(p.cursor ?? 0);
    const limit = p.limit ?? 50;
    const page = matches.slice(start, start + limit);
    const out: { adapters: unknown[]; total: number; next_cursor?: string } = {
      adapters: page.map((e) => ({ id: e.id, name: e.card.adapter.name, version: e.card.adapter.version, skills_count: e.card.skills.length, status: e.status.available ? 'available' : 'unavailable' })),
      total: matches.length,
    };
    if (start + limit < matches.length) out.next_cursor = String(start + limit);
    return out;
  }

  private async info(id: string) {
    const e = this.catalogue.getAdapter(id);
    if (!e) throw new RpcError(RPC.invalid_params, 'Unknown adapter id.', { adapter_id: id });
    const status: AdapterStatus = { ...e.status };
    if (e.kind !== 'builtin') status.software_running = e.executable ? await processRunning(e.executable) : false;
    const skills = e.functions.length ? e.functions.map((f) => f.descriptor) : e.card.skills;
    return { adapter: e.card.adapter, capabilities: e.card.capabilities, skills, status, source: e.source };
  }

  private subscribe(events: SubscribeEvent[], ctx: RpcContext) {
    if (!ctx.notify) throw new RpcError(RPC.invalid_request, 'Subscribing needs a connection that carries notifications (WS /rpc or the bridge session).');
    const id = `sub_${randomUUID()}`;
    this.subscribers.set(id, { events: new Set(events), notify: ctx.notify });
    ctx.onClose?.(() => this.subscribers.delete(id));
    return { subscription_id: id };
  }
}
