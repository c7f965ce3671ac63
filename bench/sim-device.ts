/**
 * A simulated device for benches and bridge tests: a real `ws` client that speaks the device side of
 * the protocol (PROTOCOL.md §3, §6) by hand, without the agent's journal or handlers, so that thousands
 * of them fit in one process. It says hello (offering a protocol version, carrying an Adapter Card),
 * answers `function.list`, `call.get`, pings and invokes (an echo), sends WebSocket pings every
 * `heartbeat_ms`, and on a 1.0 session a note for every state, as 1.0 requires. A call runs at most once
 * per device object: an invoke of a call that is running attaches to it, one that finished gets its outcome
 * again (`replayed`), and `call.get` answers from the same memory (`running`, or the outcome), across
 * reconnections. `stayConnected` keeps it connected over a list of addresses as the agent does with
 * `bridge.urls`.
 */
import WebSocket from 'ws';
import { backoffDelay, DEFAULT_BACKOFF, type Backoff } from '../src/agent/session.js';
import { METHODS, SUBPROTOCOL, type Descriptor, type HelloResult, type InvokeParams, type Outcome } from '../src/protocol/messages.js';

/** Who a simulated device is. */
export interface SimIdentity {
  workspace_id: string;
  user_id: string;
  device_id: string;
}

/** How a simulated device behaves. */
export interface SimDeviceOptions {
  /** `ws://host:port/v1/device`. */
  url: string;
  token: string;
  identity: SimIdentity;
  /** The version offered in hello (`1.1` by default). */
  protocolVersion?: string;
  adapterCard?: Record<string, unknown>;
  /** The card as JSON text (thousands of devices in one process keep text, not object trees). */
  adapterCardJson?: string;
  functions?: Descriptor[];
  /**
   * Notes sent before the response: `auto` (default) sends `accepted` and `running` on a 1.0 session and
   * none on 1.1 (every test call ends inside the 10 ms window); `none` never sends one.
   */
  notes?: 'auto' | 'none';
  /** Answers an invoke; the default echoes `arguments.value` as `{ value }` at once. */
  answer?: (p: InvokeParams, d: SimDevice) => Promise<Outcome> | Outcome;
  /** WebSocket ping interval (the hello result's `heartbeat_ms` when not given). */
  heartbeatMs?: number;
  /**
   * Every bridge address, in order (the agent's `bridge.urls`); `url` is ignored when given. `connect` dials
   * the current one and, failing, moves on to the next for the following `connect`; `stayConnected` moves on
   * after a failed attempt and retries its own address first after a session that was up drops.
   */
  urls?: string[];
  /**
   * Keep the device's whole at-most-once ledger: every outcome (not only the last 256) and, in `executed`,
   * the id of every call its handler ran, in order. For tests that check nothing ran twice.
   */
  ledger?: boolean;
  /** Called with each request the bridge sends, before it is served. */
  onRequest?: (method: string, params: unknown, d: SimDevice) => void;
}

type Rpc = { jsonrpc: '2.0'; id?: number | string | null; method?: string; params?: unknown; result?: unknown; error?: { code: number; message: string; data?: unknown } };

/** The function every simulated device offers. */
export const SIM_ECHO: Descriptor = {
  id: 'diagnostics.echo',
  name: 'Echo',
  description: 'Returns its input.',
  version: '1.0.0',
  capability_type: 'diagnostics',
  access: 'public',
  permission_level: 'public',
  risk: { read_only: true, destructive: false, idempotent: true, physical: false },
  confirmation: 'never',
  input_schema: { type: 'object', properties: { value: {} }, additionalProperties: false },
  output_schema: { type: 'object', properties: { value: {} } },
  timeout_ms_default: 10_000,
  timeout_ms_max: 60_000,
  cancellable: false,
  locks: [],
};

/** A completed outcome of an echo call, timestamps from the times given. */
export function echoOutcome(p: InvokeParams, accepted: Date, started: Date, finished: Date): Outcome {
  return {
    call_id: p.call_id,
    function: p.function,
    state: 'completed',
    output: { value: (p.arguments as { value?: unknown }).value ?? null },
    output_valid: true,
    error: null,
    replayed: false,
    accepted_at: accepted.toISOString(),
    started_at: started.toISOString(),
    finished_at: finished.toISOString(),
    duration_ms: finished.getTime() - started.getTime(),
    confirmation: { required: false, decision: 'not_required', decided_by: 'policy', remembered: false },
  };
}

/** One simulated device session (reconnecting is the caller's choice: `connect` again). */
export class SimDevice {
  ws: WebSocket | undefined;
  hello: HelloResult | undefined;
  /** When the current session's hello succeeded (ms since the epoch). */
  connectedAt = 0;
  /** Invokes answered on this object's life. */
  invokes = 0;
  /** With `ledger`: the id of every call the handler ran, in the order they started. */
  readonly executed: string[] = [];
  /** Sessions that came up after an earlier one dropped (`stayConnected`). */
  reconnects = 0;
  /** Attempts of `stayConnected` that failed (refused, unreachable, hello refused), with the last one's error. */
  failedAttempts = 0;
  lastError: Error | undefined;
  /** The address of the current session (set at its hello). */
  sessionUrl: string | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: unknown) => void; reject: (e: Error) => void }>();
  private readonly outcomes = new Map<string, Outcome>();
  /** Calls whose handler is running, by id: a second invoke attaches instead of running it again. */
  private readonly running = new Map<string, Promise<Outcome>>();
  private urlAt = 0;
  private staying = false;
  private attempt = 0;
  private retry: NodeJS.Timeout | undefined;
  /** The current session dropped after its hello (code); set by `stayConnected`. */
  private dropped: ((code: number) => void) | undefined;
  private pinger: NodeJS.Timeout | undefined;
  private readonly seqs = new Map<string, number>();
  /** Called when the socket closes (code). */
  onclose: ((code: number) => void) | undefined;

  constructor(readonly o: SimDeviceOptions) {}

  /** The address the next `connect` dials. */
  get url(): string {
    return this.o.urls?.length ? this.o.urls[this.urlAt % this.o.urls.length]! : this.o.url;
  }

  /** This device's outcome of a call, if it finished it (with `ledger`, every call it ever finished). */
  outcome(callId: string): Outcome | undefined {
    return this.outcomes.get(callId);
  }

  /** Opens the socket and says hello; resolves with the hello result, rejects on refusal or error. */
  connect(): Promise<HelloResult> {
    return new Promise((resolve, reject) => {
      const url = this.url;
      const ws = new WebSocket(url, SUBPROTOCOL, { headers: { Authorization: `Bearer ${this.o.token}` }, perMessageDeflate: false });
      this.ws = ws;
      let settled = false;
      let up = false;
      const fail = (e: Error) => {
        if (settled) return;
        settled = true;
        // A failed attempt moves on to the next address (when there are several); `stayConnected` moves on itself.
        if (!this.staying) this.urlAt++;
        reject(e);
      };
      ws.on('unexpected-response', (_q, res) => {
        fail(new Error(`upgrade refused: HTTP ${res.statusCode}`));
        ws.terminate();
      });
      ws.on('error', (e) => fail(e));
      ws.on('close', (code) => {
        clearInterval(this.pinger);
        for (const p of this.pending.values()) p.reject(new Error('closed'));
        this.pending.clear();
        fail(new Error(`closed before hello (${code})`));
        this.onclose?.(code);
        if (up && this.ws === ws) this.dropped?.(code);
      });
      ws.on('message', (data) => this.onMessage(data.toString()));
      ws.on('open', () => {
        this.request<HelloResult>(METHODS.hello, {
          protocol_version: this.o.protocolVersion ?? '1.1',
          client: { name: 'aios-device-sim', version: '9.0.0', platform: 'linux', arch: 'x64' },
          device: { id: this.o.identity.device_id, name: `Simulated ${this.o.identity.device_id}` },
          workspace_id: this.o.identity.workspace_id,
          user_id: this.o.identity.user_id,
          functions_revision: 1,
          ...(this.o.adapterCard ? { adapter_card: this.o.adapterCard } : {}),
          limits: { max_message_bytes: 1 << 20, max_concurrent_calls: 8, dedupe_retention_s: 86_400 },
        }).then(
          (h) => {
            this.hello = h;
            this.sessionUrl = url;
            this.connectedAt = Date.now();
            settled = true;
            up = true;
            const every = this.o.heartbeatMs ?? h.heartbeat_ms;
            this.pinger = setInterval(() => ws.readyState === WebSocket.OPEN && ws.ping(), every);
            this.pinger.unref();
            resolve(h);
          },
          (e: Error) => {
            fail(e);
            ws.close();
          },
        );
      });
    });
  }

  /** True while the socket is open and hello has succeeded. */
  get online(): boolean {
    return this.hello !== undefined && this.ws?.readyState === WebSocket.OPEN;
  }

  /** Sends a state note (`seq` counted per call, as a device does). */
  note(callId: string, state: string, at = new Date()): void {
    const seq = this.seqs.get(callId) ?? 0;
    this.seqs.set(callId, seq + 1);
    this.send({ jsonrpc: '2.0', method: METHODS.callState, params: { call_id: callId, state, seq, at: at.toISOString() } });
  }

  /** Sends `aios/call.report` (§6.8) with these outcomes; resolves with the bridge's acknowledgement. */
  report(outcomes: Outcome[]): Promise<{ accepted: string[] }> {
    return this.request(METHODS.callReport, { outcomes });
  }

  /**
   * Keeps the device connected as the agent does with `bridge.urls` (src/agent/session.ts): the first attempt
   * now, each retry after the agent's backoff (full jitter); an attempt that fails dials the next address, a
   * session that was up and dropped dials its own again first. A session replaced elsewhere (4001) stops it, as
   * it stops the agent. Resolves once the first session is up; `close()` stops it.
   */
  stayConnected(backoff: Backoff = DEFAULT_BACKOFF): Promise<void> {
    this.staying = true;
    return new Promise((resolve) => {
      const schedule = () => {
        clearTimeout(this.retry);
        this.retry = setTimeout(dial, backoffDelay(this.attempt, backoff));
        this.attempt = Math.min(this.attempt + 1, 30);
      };
      const dial = () => {
        if (!this.staying) return;
        const again = this.connectedAt > 0;
        this.connect().then(
          () => {
            if (again) this.reconnects++;
            resolve();
          },
          (e: Error) => {
            this.failedAttempts++;
            this.lastError = e;
            if (this.staying && this.o.urls && this.o.urls.length > 1) this.urlAt = (this.urlAt + 1) % this.o.urls.length;
            schedule();
          },
        );
      };
      this.dropped = (code) => {
        if (!this.staying || code === 4001) return;
        // A session that stayed up long enough starts the backoff afresh (§1).
        if (Date.now() - this.connectedAt >= backoff.resetAfterMs) this.attempt = 0;
        schedule();
      };
      dial();
    });
  }

  /** Closes the socket (normal close, or terminate: no close handshake, like a crash), and stops `stayConnected`. */
  close(terminate = false): void {
    this.staying = false;
    clearTimeout(this.retry);
    clearInterval(this.pinger);
    if (terminate) this.ws?.terminate();
    else this.ws?.close();
  }

  private request<T>(method: string, params: unknown): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (r: unknown) => void, reject });
      if (method === METHODS.hello && this.o.adapterCardJson) {
        // The card spliced in as text: `{…params}` → `{…params,"adapter_card":<card>}`.
        const head = JSON.stringify({ jsonrpc: '2.0', id, method, params });
        const cut = head.length - 2; // before the params' and the message's closing braces
        if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(`${head.slice(0, cut)},"adapter_card":${this.o.adapterCardJson}}}`);
        return;
      }
      this.send({ jsonrpc: '2.0', id, method, params });
    });
  }

  private send(m: Rpc): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(m));
  }

  private onMessage(text: string): void {
    const m = JSON.parse(text) as Rpc;
    if (m.method === undefined) {
      const p = this.pending.get(Number(m.id));
      if (!p) return;
      this.pending.delete(Number(m.id));
      if (m.error) p.reject(Object.assign(new Error(m.error.message), { rpc: m.error }));
      else p.resolve(m.result);
      return;
    }
    if (m.id === undefined) return; // a notification: nothing a simulated device needs
    this.o.onRequest?.(m.method, m.params, this);
    void this.serve(m.method, m.params).then(
      (result) => this.send({ jsonrpc: '2.0', id: m.id ?? null, result }),
      (e: Error & { rpc?: Rpc['error'] }) => this.send({ jsonrpc: '2.0', id: m.id ?? null, error: e.rpc ?? { code: -32603, message: e.message } }),
    );
  }

  private async serve(method: string | undefined, params: unknown): Promise<unknown> {
    switch (method) {
      case METHODS.ping:
        return { time: new Date().toISOString() };
      case METHODS.functionList:
        return { functions: this.o.functions ?? [SIM_ECHO], revision: 1 };
      case METHODS.callGet: {
        const id = (params as { call_id: string }).call_id;
        const o = this.outcomes.get(id);
        if (o) return o;
        if (this.running.has(id)) return { call_id: id, state: 'running' };
        throw Object.assign(new Error('unknown call'), { rpc: { code: -32602, message: 'No such call.' } });
      }
      case METHODS.invoke: {
        const p = params as InvokeParams;
        const known = this.outcomes.get(p.call_id);
        if (known) return { ...known, replayed: true };
        // Sent again while it runs (the bridge attaches after a reconnect): the same run, never a second one.
        const running = this.running.get(p.call_id);
        if (running) return running;
        // Started on the next tick, after it is in `running` (a handler that answers at once ends before that).
        const run = Promise.resolve().then(() => this.run(p));
        this.running.set(p.call_id, run);
        return run;
      }
      default:
        throw Object.assign(new Error('method not found'), { rpc: { code: -32601, message: 'Method not found.' } });
    }
  }

  /** Runs a call's handler once, and keeps its outcome (the device's memory of what it ran). */
  private async run(p: InvokeParams): Promise<Outcome> {
    this.invokes++;
    if (this.o.ledger) this.executed.push(p.call_id);
    try {
      const accepted = new Date();
      const everyNote = this.o.notes !== 'none' && this.hello?.protocol_version === '1.0';
      if (everyNote) this.note(p.call_id, 'accepted', accepted);
      const started = new Date();
      if (everyNote) this.note(p.call_id, 'running', started);
      const o = this.o.answer ? await this.o.answer(p, this) : echoOutcome(p, accepted, started, new Date());
      this.outcomes.set(p.call_id, o);
      // A simulated device keeps a bounded memory of outcomes (the real one has its journal), unless it keeps a ledger.
      if (!this.o.ledger && this.outcomes.size > 256) this.outcomes.delete(this.outcomes.keys().next().value!);
      this.seqs.delete(p.call_id);
      return o;
    } finally {
      this.running.delete(p.call_id);
    }
  }
}
