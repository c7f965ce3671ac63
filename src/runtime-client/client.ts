/**
 * A small client for the bridge's runtime HTTP API (§10), used by `invoke`, the trial, tests and benchmarks.
 * It stands below the commands (docs/architecture.md): the CLI and the trial both call the bridge through it,
 * and it knows neither.
 */
import type { CallRecord } from '../bridge/store.js';
import { SaidError } from '../i18n/said.js';

/** Where a runtime reaches the bridge and as whom. */
export interface RuntimeProfile {
  bridge_url: string;
  token: string;
  workspace_id: string;
  device_id?: string;
}

/** An HTTP error answer from the bridge, with its §2 error body. */
export class BridgeHttpError extends Error {
  constructor(readonly status: number, readonly error: { code: number; type: string; message: string; retryable: boolean; details?: Record<string, unknown> }) {
    super(`${error.type}: ${error.message}`);
    this.name = 'BridgeHttpError';
  }
}

/** The bridge did not answer at all (down, wrong address): nothing was sent to a device. */
export class BridgeUnreachableError extends SaidError {
  constructor(readonly url: string, readonly reason: string) {
    super({ key: 'cli.bridge.unreachable', params: { url, reason } });
    this.name = 'BridgeUnreachableError';
  }
}

/**
 * No device is named, in the call nor in the profile (a runtime profile written by hand may lack
 * `device_id`): the caller's mistake, said as what to do (the CLI exits with its usage code).
 */
export class NoDeviceError extends SaidError {
  constructor() {
    super({ key: 'cli.usage.no_device' });
    this.name = 'NoDeviceError';
  }
}

/** Calls the runtime API. */
export class RuntimeClient {
  constructor(readonly profile: RuntimeProfile) {}

  private async req<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const url = this.profile.bridge_url.replace(/\/$/, '') + path;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: { Authorization: `Bearer ${this.profile.token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (e) {
      // fetch says only "fetch failed": the person needs the address that did not answer, and why.
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new BridgeUnreachableError(this.profile.bridge_url, cause?.code ?? cause?.message ?? (e as Error).message);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      throw new SaidError({ key: 'cli.bridge.not_json', params: { status: res.status } });
    }
    if (res.status >= 400) {
      const err = (parsed as { error?: BridgeHttpError['error'] }).error ?? { code: 0, type: 'http_' + res.status, message: text.slice(0, 200), retryable: false };
      throw new BridgeHttpError(res.status, err);
    }
    return { status: res.status, body: parsed as T };
  }

  /** POST /v1/calls. */
  async call(fn: string, args: Record<string, unknown>, opts: { device_id?: string; call_id?: string; timeout_ms?: number; confirm_timeout_ms?: number; wait?: boolean; wait_timeout_ms?: number; requester?: { kind: string; id?: string; name?: string } } = {}): Promise<{ status: number; record: CallRecord }> {
    const device = opts.device_id ?? this.profile.device_id;
    if (!device) throw new NoDeviceError();
    const body: Record<string, unknown> = { workspace_id: this.profile.workspace_id, device_id: device, function: fn, arguments: args, wait: opts.wait ?? true };
    for (const k of ['call_id', 'timeout_ms', 'confirm_timeout_ms', 'wait_timeout_ms', 'requester'] as const) if (opts[k] !== undefined) body[k] = opts[k];
    const r = await this.req<CallRecord>('POST', '/v1/calls', body);
    return { status: r.status, record: r.body };
  }

  async getCall(callId: string): Promise<CallRecord> {
    return (await this.req<CallRecord>('GET', `/v1/calls/${encodeURIComponent(callId)}`)).body;
  }

  async cancel(callId: string, reason?: string): Promise<CallRecord> {
    return (await this.req<CallRecord>('POST', `/v1/calls/${encodeURIComponent(callId)}/cancel`, reason ? { reason } : {})).body;
  }

  /** GET /v1/devices/{id}/functions/{fn}: one function's descriptor as the device published it. */
  async descriptor(deviceId: string, fn: string): Promise<Record<string, unknown>> {
    return (await this.req<Record<string, unknown>>('GET', `/v1/devices/${encodeURIComponent(deviceId)}/functions/${encodeURIComponent(fn)}`)).body;
  }

  async devices(): Promise<{ devices: Record<string, unknown>[] }> {
    return (await this.req<{ devices: Record<string, unknown>[] }>('GET', `/v1/devices?workspace_id=${encodeURIComponent(this.profile.workspace_id)}`)).body;
  }

  async device(id: string): Promise<Record<string, unknown>> {
    return (await this.req<Record<string, unknown>>('GET', `/v1/devices/${encodeURIComponent(id)}`)).body;
  }

  /** Waits until the call is terminal (polling), up to `ms`. */
  async waitTerminal(callId: string, ms: number): Promise<CallRecord> {
    const end = Date.now() + ms;
    for (;;) {
      const r = await this.getCall(callId);
      if (r.outcome || Date.now() > end) return r;
      await new Promise((res) => setTimeout(res, 100));
    }
  }
}
