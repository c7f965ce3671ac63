/**
 * Picks the device and the backend for a capture, checks the grant, runs the capture into a private temp
 * file and tracks what is in use (for the status and the desktop notice). No SDK imports: failures are
 * `CaptureError`s that the functions file turns into wire errors.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CaptureError, type CaptureBackend, type CaptureOp, type CaptureProgress, type CaptureResult, type DeviceInfo, type DeviceKind } from './backends/types.js';
import { PROVIDER_ID_PREFIX, type ProviderHub } from './backends/provider-hub.js';
import { imageDims } from './backends/image-dims.js';

/** A grant as the functions see it (KIT-API's normal form, reduced to what media uses). */
export interface MediaGrant {
  id: string;
  alias?: string;
}

/** A device resolved for a call: the device, and the grant's alias when it has one. */
export interface ResolvedDevice {
  device: DeviceInfo;
  alias?: string;
}

/** One capture running now, as the status shows it. */
export interface InUse {
  kind: DeviceKind;
  device: string;
  function: string;
  requester: string;
  since: string;
}

/** Which backend serves captures when both could. */
export type BackendChoice = 'auto' | 'ffmpeg' | 'provider';

/** The grant-kind name of each device kind (config `grants.<name>`). */
export const GRANT_KIND: Readonly<Record<DeviceKind, 'cameras' | 'microphones' | 'screens'>> = { camera: 'cameras', microphone: 'microphones', screen: 'screens' };

const NOUN: Readonly<Record<DeviceKind, string>> = { camera: 'camera', microphone: 'microphone', screen: 'screen' };

/** True when grant `g` covers device `d`: `*`, the device id, or (for a plain string grant) its label. */
export function grantCovers(g: MediaGrant, d: DeviceInfo): boolean {
  const id = g.id.toLowerCase();
  return id === '*' || g.id === d.id || id === d.label.toLowerCase();
}

/** The media service of one handler instance. */
export class MediaService {
  private readonly cache = new Map<DeviceKind, DeviceInfo[]>();
  private readonly running = new Map<string, InUse>();
  private readonly stoppers = new Map<string, AbortController>();
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly ffmpeg: CaptureBackend,
    readonly provider: ProviderHub,
    private readonly choice: BackendChoice = 'auto',
  ) {
    provider.onChange(() => this.changed());
  }

  private backends(): CaptureBackend[] {
    if (this.choice === 'ffmpeg') return [this.ffmpeg];
    if (this.choice === 'provider') return [this.provider];
    // A page attached (the tray's capture window, or a browser) is listed first: it is what the user runs.
    return [this.provider, this.ffmpeg];
  }

  /** Devices of a kind across the backends in use; failures of one backend (no ffmpeg) do not hide the other's. */
  async list(kind: DeviceKind, signal?: AbortSignal): Promise<DeviceInfo[]> {
    const lists = await Promise.all(this.backends().map((b) => b.list(kind, signal).catch(() => [] as DeviceInfo[])));
    const all = lists.flat();
    this.cache.set(kind, all);
    return all;
  }

  /** The backend that opens this device. */
  backendFor(d: DeviceInfo): CaptureBackend {
    return d.id.startsWith(PROVIDER_ID_PREFIX) ? this.provider : this.ffmpeg;
  }

  /** Devices opened right now across backends. */
  get openCount(): number {
    return this.ffmpeg.openCount + this.provider.openCount;
  }

  /**
   * The device a call will use: the named one (id, label or the grant's alias) or the first granted one.
   * Not granted → permission_denied; granted but absent → device_unavailable. Both before any prompt.
   */
  async resolve(kind: DeviceKind, requested: string | undefined, grants: readonly MediaGrant[], signal?: AbortSignal): Promise<ResolvedDevice> {
    return this.pick(kind, requested, grants, await this.list(kind, signal));
  }

  /** Like `resolve`, on the last listing (for lock names, which are computed synchronously). */
  resolveCached(kind: DeviceKind, requested: string | undefined, grants: readonly MediaGrant[]): ResolvedDevice | undefined {
    try {
      return this.pick(kind, requested, grants, this.cache.get(kind) ?? []);
    } catch {
      return undefined;
    }
  }

  private pick(kind: DeviceKind, requested: string | undefined, grants: readonly MediaGrant[], devices: DeviceInfo[]): ResolvedDevice {
    const noun = NOUN[kind];
    const where = `grants.${GRANT_KIND[kind]}`;
    if (!grants.length) throw new CaptureError('permission_denied', `No ${noun} is shared with this agent; add one (or "*") under ${where}.`, 'not_granted');
    if (requested === undefined) {
      for (const d of devices) {
        const g = grants.find((x) => grantCovers(x, d));
        if (g) return { device: d, ...(g.alias ? { alias: g.alias } : {}) };
      }
      throw new CaptureError('device_unavailable', `No shared ${noun} is connected to this device.`, 'no_device');
    }
    const byAlias = grants.find((g) => g.alias !== undefined && g.alias.toLowerCase() === requested.toLowerCase());
    const wanted = byAlias ? byAlias.id : requested;
    const device = devices.find((d) => d.id === wanted || d.label.toLowerCase() === wanted.toLowerCase());
    const grant = byAlias ?? (device ? grants.find((g) => grantCovers(g, device)) : grants.find((g) => g.id === '*' || g.id === requested || g.id.toLowerCase() === requested.toLowerCase()));
    if (!grant) throw new CaptureError('permission_denied', `The ${noun} "${requested}" is not shared with this agent; add it under ${where}.`, 'not_granted');
    if (!device) throw new CaptureError('device_unavailable', `The ${noun} "${requested}" is not connected to this device.`, 'no_device');
    return { device, ...(grant.alias ? { alias: grant.alias } : {}) };
  }

  /** Stops every running capture at once (the user paused the agent); they end with `paused`. */
  stopAll(): void {
    for (const s of this.stoppers.values()) s.abort(new CaptureError('paused', 'The user paused the agent; the capture was stopped and nothing was kept.', 'paused'));
  }

  /** Captures running now. */
  inUse(): InUse[] {
    return [...this.running.values()];
  }

  /** Status listeners: a capture started or ended, a provider came or went. */
  onChange(cb: () => void): void {
    this.listeners.add(cb);
  }

  private changed(): void {
    for (const cb of this.listeners) cb();
  }

  /**
   * Runs one capture into a private temp file (folder 0700, file 0600) and hands the file to `use`
   * (upload). The folder is removed when this returns or throws, so a cancelled or failed capture leaves
   * nothing behind. `tempDir` makes the folder (the kit's ctx.tempDir once it exists).
   */
  async capture<T>(
    call: { callId: string; functionId: string; requester: string; signal: AbortSignal; onProgress?: (p: CaptureProgress) => void; tempDir?: () => Promise<string> },
    resolved: ResolvedDevice,
    op: CaptureOp,
    use: (path: string, result: CaptureResult) => Promise<T>,
  ): Promise<T> {
    const dir = call.tempDir ? await call.tempDir() : await mkdtemp(join(tmpdir(), 'aios-media-'));
    const ext = op.format === 'jpeg' ? 'jpg' : op.format === 'opus' ? 'ogg' : op.format;
    const outPath = join(dir, `capture.${ext}`);
    const d = resolved.device;
    this.running.set(call.callId, { kind: d.kind, device: resolved.alias ?? d.label, function: call.functionId, requester: call.requester, since: new Date().toISOString() });
    const stopper = new AbortController();
    this.stoppers.set(call.callId, stopper);
    this.changed();
    try {
      const signal = AbortSignal.any([call.signal, stopper.signal]);
      const result = await this.backendFor(d).capture({ ...op, device: d, outPath }, signal, call.onProgress);
      if (op.op === 'photo' || op.op === 'screenshot') {
        // Report what the file holds, not what the backend says.
        const dims = await imageDims(outPath).catch(() => undefined);
        if (!dims) throw new CaptureError('execution_failed', `The ${NOUN[d.kind]} produced no readable picture.`, 'bad_output');
        result.width = dims.width;
        result.height = dims.height;
      }
      return await use(outPath, result);
    } finally {
      this.running.delete(call.callId);
      this.stoppers.delete(call.callId);
      this.changed();
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    }
  }
}
