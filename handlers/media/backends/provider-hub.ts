/**
 * The capture-provider backend: a web page (electron/renderer/capture.html) using getUserMedia /
 * getDisplayMedia attaches over the local endpoint's `WS /rpc` with the local token and does the capture;
 * this hub is the agent's side of that protocol. No SDK imports: the functions file registers `methods()`
 * on the local endpoint.
 *
 * Protocol (JSON-RPC 2.0 over `WS /rpc`; binary frames are refused there, so bytes travel as base64 chunks):
 *   page → agent  media.provider.attach   { name, devices: [{ kind, id, label }] } → { provider_id }
 *                 media.provider.devices  { devices }                               (the list changed)
 *                 media.provider.event    { request_id, event: 'opened' | 'closed' } (device open/closed)
 *                 media.provider.progress { request_id, elapsed_ms, level? }
 *                 media.provider.chunk    { request_id, seq, data }                 (base64, ≤ 512 KiB decoded)
 *                 media.provider.done     { request_id, media_type, width?, height?, duration_ms? }
 *                 media.provider.fail     { request_id, error: 'not_allowed'|'not_found'|'busy'|'failed' }
 *   agent → page  media/notification.capture { request_id, kind, device_id, op, format, … }
 *                 media/notification.stop    { request_id }  (cancel/timeout: stop the tracks, drop the data)
 */
import { open, type FileHandle } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { CaptureError, mediaTypeOf, type CaptureBackend, type CaptureProgress, type CaptureRequest, type CaptureResult, type DeviceInfo, type DeviceKind } from './types.js';

/** The slice of the local endpoint's per-connection context the hub needs. */
export interface ProviderConnection {
  readonly notify?: (method: string, params: unknown) => void;
  readonly onClose?: (cb: () => void) => void;
}

/** A local-endpoint method as the hub implements it. */
export type ProviderMethod = (params: unknown, conn: ProviderConnection) => Promise<unknown>;

/** Method and notification names of the protocol. */
export const PROVIDER_METHODS = {
  attach: 'media.provider.attach',
  devices: 'media.provider.devices',
  event: 'media.provider.event',
  progress: 'media.provider.progress',
  chunk: 'media.provider.chunk',
  done: 'media.provider.done',
  fail: 'media.provider.fail',
} as const;

/** Notifications the agent sends to the provider. */
export const PROVIDER_NOTIFICATIONS = { capture: 'media/notification.capture', stop: 'media/notification.stop' } as const;

/** Largest chunk (decoded) and largest capture a provider may send. */
export const MAX_CHUNK_BYTES = 512 * 1024;
export const MAX_CAPTURE_BYTES = 512 * 1024 * 1024;

/** Device ids of provider devices carry this prefix, so they never clash with ffmpeg's. */
export const PROVIDER_ID_PREFIX = 'page:';

/** A provider as shown in status (which page is attached, since when). */
export interface ProviderInfo {
  provider_id: string;
  name: string;
  attached_at: string;
}

interface Provider extends ProviderInfo {
  notify: (method: string, params: unknown) => void;
  devices: DeviceInfo[];
  open: Set<string>;
}

interface Pending {
  provider: Provider;
  req: CaptureRequest;
  file: FileHandle;
  nextSeq: number;
  bytes: number;
  writes: Promise<void>;
  onProgress?: (p: CaptureProgress) => void;
  resolve(r: CaptureResult): void;
  reject(e: unknown): void;
}

const KINDS: readonly DeviceKind[] = ['camera', 'microphone', 'screen'];
const FAIL_TYPES = { not_allowed: 'permission_denied', not_found: 'device_unavailable', busy: 'device_busy', failed: 'execution_failed' } as const;

function obj(p: unknown): Record<string, unknown> {
  if (!p || typeof p !== 'object' || Array.isArray(p)) throw new CaptureError('invalid_arguments', 'Expected an object of parameters.');
  return p as Record<string, unknown>;
}

function str(v: unknown, what: string, max = 512): string {
  if (typeof v !== 'string' || !v || v.length > max) throw new CaptureError('invalid_arguments', `${what} must be a non-empty string.`);
  return v;
}

function parseDevices(v: unknown): DeviceInfo[] {
  if (!Array.isArray(v) || v.length > 64) throw new CaptureError('invalid_arguments', 'devices must be a list of at most 64 devices.');
  return v.map((d) => {
    const o = obj(d);
    const kind = o['kind'] as DeviceKind;
    if (!KINDS.includes(kind)) throw new CaptureError('invalid_arguments', 'A device kind must be camera, microphone or screen.');
    return { kind, id: PROVIDER_ID_PREFIX + str(o['id'], 'A device id', 256), label: typeof o['label'] === 'string' && o['label'] ? o['label'].slice(0, 200) : `${kind} (capture page)` };
  });
}

/** The agent's side of the capture-provider protocol, and a `CaptureBackend` over the attached page. */
export class ProviderHub implements CaptureBackend {
  readonly name = 'provider';
  private readonly providers: Provider[] = [];
  private readonly pending = new Map<string, Pending>();
  private openedTotal = 0;
  private readonly listeners = new Set<() => void>();

  /** Called whenever a provider attaches, detaches or its devices change (status). */
  onChange(cb: () => void): () => void {
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }

  private changed(): void {
    for (const cb of this.listeners) cb();
  }

  /** Attached providers, newest last. */
  attached(): ProviderInfo[] {
    return this.providers.map((p) => ({ provider_id: p.provider_id, name: p.name, attached_at: p.attached_at }));
  }

  get openCount(): number {
    return this.providers.reduce((n, p) => n + p.open.size, 0);
  }

  get opened(): number {
    return this.openedTotal;
  }

  async list(kind: DeviceKind): Promise<DeviceInfo[]> {
    const seen = new Set<string>();
    const out: DeviceInfo[] = [];
    // Newest provider first: when two pages offer the same device, the newest one serves it.
    for (const p of [...this.providers].reverse())
      for (const d of p.devices) {
        if (d.kind !== kind || seen.has(d.id)) continue;
        seen.add(d.id);
        out.push(d);
      }
    return out;
  }

  private providerFor(deviceId: string): Provider | undefined {
    return [...this.providers].reverse().find((p) => p.devices.some((d) => d.id === deviceId));
  }

  async capture(req: CaptureRequest, signal: AbortSignal, onProgress?: (p: CaptureProgress) => void): Promise<CaptureResult> {
    if (signal.aborted) throw signal.reason;
    const provider = this.providerFor(req.device.id);
    if (!provider) throw new CaptureError('device_unavailable', 'The capture page that offered this device is no longer attached; open the tray (or the capture page) and try again.', 'provider_gone');
    const requestId = randomUUID();
    // The page's bytes go straight to the (0600) file the call made; nothing is kept in memory.
    const file = await open(req.outPath, 'w', 0o600);
    const { outPath: _out, device, ...op } = req;
    const done = new Promise<CaptureResult>((resolve, reject) => {
      this.pending.set(requestId, { provider, req, file, nextSeq: 0, bytes: 0, writes: Promise.resolve(), ...(onProgress ? { onProgress } : {}), resolve, reject });
    });
    const onAbort = () => {
      provider.notify(PROVIDER_NOTIFICATIONS.stop, { request_id: requestId });
      this.finish(requestId, signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    provider.notify(PROVIDER_NOTIFICATIONS.capture, { request_id: requestId, kind: device.kind, device_id: device.id.slice(PROVIDER_ID_PREFIX.length), ...wireOp(op) });
    try {
      return await done;
    } finally {
      signal.removeEventListener('abort', onAbort);
      await file.close().catch(() => undefined);
      // A stop must leave the device closed when the call ends: wait (briefly) for the page to say so.
      if (provider.open.has(requestId)) await this.waitClosed(provider, requestId, 3000);
    }
  }

  private waitClosed(p: Provider, requestId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        off();
        p.open.delete(requestId);
        resolve();
      }, ms);
      const off = this.onChange(() => {
        if (p.open.has(requestId)) return;
        clearTimeout(timer);
        off();
        resolve();
      });
    });
  }

  private finish(requestId: string, outcome: CaptureResult | unknown, ok = false): void {
    const p = this.pending.get(requestId);
    if (!p) return;
    this.pending.delete(requestId);
    if (ok) void p.writes.then(() => p.resolve(outcome as CaptureResult), (e: unknown) => p.reject(e));
    else p.reject(outcome);
  }

  private pendingFor(params: Record<string, unknown>, conn: ProviderConnection): Pending {
    const p = this.pending.get(str(params['request_id'], 'request_id', 64));
    if (!p || p.provider.notify !== conn.notify) throw new CaptureError('invalid_arguments', 'No such capture request on this connection.');
    return p;
  }

  private providerOf(conn: ProviderConnection): Provider {
    const p = this.providers.find((x) => x.notify === conn.notify);
    if (!p) throw new CaptureError('invalid_arguments', 'Attach as a capture provider first (media.provider.attach).');
    return p;
  }

  /** The local-endpoint methods of the protocol (local token required). */
  methods(): Record<string, ProviderMethod> {
    return {
      [PROVIDER_METHODS.attach]: async (params, conn) => {
        const o = obj(params);
        if (!conn.notify || !conn.onClose) throw new CaptureError('invalid_arguments', 'A capture provider attaches over WS /rpc (it needs a back channel).');
        if (this.providers.some((x) => x.notify === conn.notify)) throw new CaptureError('invalid_arguments', 'This connection is already attached.');
        const p: Provider = {
          provider_id: randomUUID(),
          name: typeof o['name'] === 'string' && o['name'] ? o['name'].slice(0, 80) : 'capture page',
          attached_at: new Date().toISOString(),
          notify: conn.notify,
          devices: parseDevices(o['devices'] ?? []),
          open: new Set(),
        };
        this.providers.push(p);
        conn.onClose(() => this.detach(p));
        this.changed();
        return { provider_id: p.provider_id };
      },
      [PROVIDER_METHODS.devices]: async (params, conn) => {
        const p = this.providerOf(conn);
        p.devices = parseDevices(obj(params)['devices']);
        this.changed();
        return { ok: true };
      },
      [PROVIDER_METHODS.event]: async (params, conn) => {
        const o = obj(params);
        const p = this.providerOf(conn);
        const id = str(o['request_id'], 'request_id', 64);
        if (o['event'] === 'opened' && this.pending.get(id)?.provider === p) {
          p.open.add(id);
          this.openedTotal++;
        } else if (o['event'] === 'closed') p.open.delete(id);
        else throw new CaptureError('invalid_arguments', 'event must be opened or closed, for a capture of this connection.');
        this.changed();
        return { ok: true };
      },
      [PROVIDER_METHODS.progress]: async (params, conn) => {
        const o = obj(params);
        const p = this.pendingFor(o, conn);
        const total = p.req.op === 'clip' || p.req.op === 'audio' ? p.req.durationMs : 0;
        const elapsed = Number(o['elapsed_ms']);
        const level = Number(o['level']);
        if (total && Number.isFinite(elapsed)) p.onProgress?.({ elapsedMs: Math.min(Math.max(0, elapsed), total), totalMs: total, ...(Number.isFinite(level) ? { level: Math.min(1, Math.max(0, level)) } : {}) });
        return { ok: true };
      },
      [PROVIDER_METHODS.chunk]: async (params, conn) => {
        const o = obj(params);
        const p = this.pendingFor(o, conn);
        if (o['seq'] !== p.nextSeq) throw new CaptureError('invalid_arguments', `Expected chunk ${p.nextSeq}.`);
        if (typeof o['data'] !== 'string' || o['data'].length > Math.ceil(MAX_CHUNK_BYTES / 3) * 4) throw new CaptureError('invalid_arguments', 'data must be base64 of at most 512 KiB.');
        const bytes = Buffer.from(o['data'], 'base64');
        p.bytes += bytes.length;
        if (p.bytes > MAX_CAPTURE_BYTES) {
          this.finish(str(o['request_id'], 'request_id'), new CaptureError('execution_failed', 'The capture page sent more data than a capture may hold.', 'too_large'));
          throw new CaptureError('invalid_arguments', 'The capture is too large.');
        }
        p.nextSeq++;
        p.writes = p.writes.then(() => p.file.write(bytes).then(() => undefined));
        await p.writes;
        return { ok: true };
      },
      [PROVIDER_METHODS.done]: async (params, conn) => {
        const o = obj(params);
        const p = this.pendingFor(o, conn);
        const expected = mediaTypeOf(p.req);
        const mt = typeof o['media_type'] === 'string' ? o['media_type'].split(';')[0]!.trim() : '';
        if (mt !== expected) {
          this.finish(o['request_id'] as string, new CaptureError('execution_failed', `The capture page produced ${mt || 'an unknown type'} instead of ${expected}.`, 'wrong_format'));
          return { ok: false };
        }
        const n = (k: string) => (typeof o[k] === 'number' && Number.isFinite(o[k]) && (o[k] as number) > 0 ? { [k === 'duration_ms' ? 'durationMs' : k]: Math.round(o[k] as number) } : {});
        this.finish(o['request_id'] as string, { mediaType: expected, ...n('width'), ...n('height'), ...n('duration_ms') }, true);
        return { ok: true };
      },
      [PROVIDER_METHODS.fail]: async (params, conn) => {
        const o = obj(params);
        this.pendingFor(o, conn);
        const kind = (o['error'] as keyof typeof FAIL_TYPES) in FAIL_TYPES ? (o['error'] as keyof typeof FAIL_TYPES) : 'failed';
        this.finish(o['request_id'] as string, providerError(kind));
        return { ok: true };
      },
    };
  }

  private detach(p: Provider): void {
    const i = this.providers.indexOf(p);
    if (i >= 0) this.providers.splice(i, 1);
    p.open.clear();
    for (const [id, pend] of this.pending)
      if (pend.provider === p) this.finish(id, new CaptureError('device_unavailable', 'The capture page went away during the capture; open it again and retry.', 'provider_gone'));
    this.changed();
  }
}

/** The typed error for a provider's failure word; the message says what to do. */
export function providerError(kind: keyof typeof FAIL_TYPES): CaptureError {
  const type = FAIL_TYPES[kind];
  if (type === 'permission_denied') return new CaptureError(type, 'The browser or the system refused access to the device; allow it for AIOS Device in the system\'s privacy settings and try again.', 'os_refused');
  if (type === 'device_unavailable') return new CaptureError(type, 'The device was not found by the capture page; check that it is connected.', 'no_device');
  if (type === 'device_busy') return new CaptureError(type, 'The device is in use by another program; close it and try again.', 'busy');
  return new CaptureError(type, 'The capture page could not capture from the device.', 'provider_failed');
}

/** The op as the page receives it (snake_case, no local paths). */
function wireOp(op: Omit<CaptureRequest, 'outPath' | 'device'>): Record<string, unknown> {
  const o: Record<string, unknown> = { op: op.op, format: op.format };
  if ('durationMs' in op) o['duration_ms'] = op.durationMs;
  if ('width' in op && op.width) o['width'] = op.width;
  if ('height' in op && op.height) o['height'] = op.height;
  if ('quality' in op && op.quality) o['quality'] = op.quality;
  if ('scale' in op && op.scale) o['scale'] = op.scale;
  return o;
}
