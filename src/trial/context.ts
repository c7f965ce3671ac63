/**
 * What every trial check works with: the runtime client, the devices as the bridge knows them, the local
 * control (when given), the scratch share, the results so far, and the helpers that record evidence.
 */
import { RuntimeClient, BridgeHttpError, type RuntimeProfile } from '../runtime-client/client.js';
import type { CallRecord } from '../bridge/store.js';
import type { Descriptor } from '../protocol/messages.js';
import type { LocalControl } from './local-control.js';
import type { Scratch } from './scratch.js';
import type { GrantView } from '../control/api.js';
import type { CheckResult, Trace, Verdict } from './types.js';
import type { Message } from '../i18n/index.js';
import { m, TrialError } from './say.js';
import type { Locale } from '../i18n/index.js';

/** What `trial` was asked to do. */
export interface TrialOptions {
  bridge: string;
  runtimeToken: string;
  workspace: string;
  devices: string[];
  only?: string[];
  skip?: string[];
  unattended?: boolean;
  allowEffects?: boolean;
  allowNotRun?: string[];
  control?: 'none' | 'local';
  agentDataDir?: string;
  expectWorkspace?: string;
  expectUser?: string;
  /** The report's language (default en). */
  lang?: Locale;
  /** The CLI entry to run for the "bridge unreachable" check (this program). */
  cli?: { node: string; args: string[] };
  /** Each check's progress line (the CLI prints them). */
  onCheck?(r: CheckResult): void;
}

/** What a check observed. */
export interface Observed {
  verdict: Verdict;
  message: Message;
  /** A contract check that validated a completed call's output against `output_schema` itself. */
  output_validated?: boolean;
}

/** Call options as the runtime API takes them. */
export type CallOptions = Parameters<RuntimeClient['call']>[2];

/** The requester every trial call names. */
const REQUESTER = { kind: 'qa', id: 'aios-trial', name: 'AIOS trial' };

/** One run's shared state. */
export class TrialContext {
  readonly client: RuntimeClient;
  readonly primary: string;
  control: LocalControl | undefined;
  controlProblem: Message = m('trial.m.no_control');
  /** How prompts are answered by the trial itself (`--unattended`), if they are. */
  answeringBy: 'attach' | 'status' | undefined;
  /** The scratch share, once made (see scratch.ts); `scratchProblem` says why there is none. */
  scratch: Scratch | undefined;
  scratchProblem: Message | undefined;
  /** The device's grants by kind, once read (grants.ts); null when the agent would not list them. */
  grants: Record<string, GrantView[]> | null | undefined;
  readonly results: CheckResult[] = [];
  private readonly records = new Map<string, Record<string, unknown> | Error>();

  constructor(readonly o: TrialOptions) {
    this.primary = o.devices[0]!;
    const profile: RuntimeProfile = { bridge_url: o.bridge, token: o.runtimeToken, workspace_id: o.workspace, device_id: this.primary };
    this.client = new RuntimeClient(profile);
  }

  /** `GET /v1/devices/<id>`, fetched once per run (client.version records it as evidence). */
  async device(id: string): Promise<Record<string, unknown>> {
    if (!this.records.has(id)) {
      try {
        this.records.set(id, await this.client.device(id));
      } catch (e) {
        this.records.set(id, e as Error);
      }
    }
    const r = this.records.get(id)!;
    if (r instanceof Error) throw r;
    return r;
  }

  /** The functions `id` publishes, by id (none when its record could not be read). */
  async functions(id: string): Promise<Descriptor[]> {
    const d = await this.device(id).catch(() => undefined);
    return ((d?.['functions'] as Descriptor[] | undefined) ?? []).slice().sort((a, b) => a.id.localeCompare(b.id));
  }

  /** The result of check `id` on `device` (or on the run, for a check that is not per device). */
  result(id: string, device?: string): CheckResult | undefined {
    return this.results.find((r) => r.id === id && (r.device === undefined || device === undefined || r.device === device));
  }

  /** Runs `f` and records the request and its answer (or error) as evidence. */
  async ev<T>(evidence: Trace[], label: Message, request: unknown, f: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    try {
      const response = await f();
      evidence.push({ label, request, response, ms: Math.round(performance.now() - t0) });
      return response;
    } catch (e) {
      evidence.push({ label, request, response: e instanceof BridgeHttpError ? { http_status: e.status, error: e.error } : { error: String(e) }, ms: Math.round(performance.now() - t0) });
      throw e;
    }
  }

  /** A call through the runtime API, recorded as evidence; resolves with the call's record. */
  call(evidence: Trace[], label: Message, device: string, fn: string, args: Record<string, unknown>, opts: CallOptions = {}): Promise<CallRecord> {
    return this.ev(evidence, label, { device_id: device, function: fn, arguments: args, ...opts }, async () => (await this.client.call(fn, args, { device_id: device, requester: REQUESTER, ...opts })).record);
  }
}

/** Polls a call until it reaches `state` (or ends); rejects after `ms`. */
export async function waitState(client: RuntimeClient, callId: string, state: string, ms: number): Promise<CallRecord> {
  const end = Date.now() + ms;
  for (;;) {
    const r = await client.getCall(callId);
    if (r.state === state || r.timeline.some((t) => t.state === state) || r.outcome) return r;
    if (Date.now() > end) throw new TrialError(m('trial.m.not_reached', { state, ms }));
    await new Promise((res) => setTimeout(res, 50));
  }
}
