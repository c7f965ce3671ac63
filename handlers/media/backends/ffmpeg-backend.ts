/**
 * The headless capture backend: ffmpeg as a child process. One child per capture; abort kills it at
 * once (SIGKILL: the partial file is discarded anyway, so there is nothing to finalize) and the call ends
 * only after the child has exited, so the device is closed when the caller learns of the cancel.
 * ffmpeg's stderr is read only to classify failures; it is never logged (it can name devices and paths).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkCaptureId } from './device-check.js';
import { captureArgs, inputFor, listArgs, parseAvfoundationList, parseDshowList, peakLevel, progressTimeMs, type ConfiguredDevice } from './ffmpeg-args.js';
import { CaptureError, mediaTypeOf, type CaptureBackend, type CaptureProgress, type CaptureRequest, type CaptureResult, type DeviceInfo, type DeviceKind } from './types.js';

/** Options of the ffmpeg backend. */
export interface FfmpegBackendOptions {
  /** The ffmpeg executable: a path, or a name looked up on PATH (default `ffmpeg`). */
  ffmpeg?: string;
  /** Devices named by the operator (their input replaces the platform's); listed before probed ones. */
  devices?: ConfiguredDevice[];
  /** Probe the platform's devices besides the configured ones (default true). */
  probe?: boolean;
  platform?: NodeJS.Platform;
  env?: NodeJS.ProcessEnv;
  /** Root of `/dev` and `/sys` lookups (tests). */
  sysRoot?: string;
  /** Told when a device opens or closes (the status shows the open count). */
  onOpenChange?: () => void;
}

/** What to do when ffmpeg is missing, per platform. */
export function installHint(platform: NodeJS.Platform): string {
  if (platform === 'darwin') return 'Install it (brew install ffmpeg) or set handlers.media.ffmpeg to its path.';
  if (platform === 'win32') return 'Install it (winget install Gyan.FFmpeg) or set handlers.media.ffmpeg to its path.';
  return 'Install it (Debian/Ubuntu: apt install ffmpeg) or set handlers.media.ffmpeg to its path.';
}

/** What to do when the OS refused access to a device, per platform and kind. */
export function permissionHint(platform: NodeJS.Platform, kind: DeviceKind): string {
  const what = kind === 'camera' ? 'Camera' : kind === 'microphone' ? 'Microphone' : 'Screen Recording';
  if (platform === 'darwin') return `Allow AIOS Device under System Settings > Privacy & Security > ${what}, then try again.`;
  if (platform === 'win32') return `Turn on access under Settings > Privacy & security > ${kind === 'screen' ? 'Screen capture' : what} for desktop apps, then try again.`;
  if (kind === 'camera') return 'Add the user running the agent to the "video" group (sudo usermod -aG video $USER) and sign in again.';
  if (kind === 'microphone') return 'Add the user running the agent to the "audio" group or run it inside the desktop session (PulseAudio/PipeWire).';
  return 'Allow the agent to read the X display (xhost or the session\'s XAUTHORITY); on Wayland use the tray\'s capture window instead.';
}

/** Turns ffmpeg's failure text into a typed error; the text itself is never part of the message. */
export function classifyFailure(stderr: string, kind: DeviceKind, platform: NodeJS.Platform): CaptureError {
  const s = stderr.toLowerCase();
  const what = kind === 'screen' ? 'display' : kind;
  if (/permission denied|not authorized|access denied|operation not permitted|failed to authorize/.test(s)) return new CaptureError('permission_denied', `The system refused access to the ${what}. ${permissionHint(platform, kind)}`, 'os_refused');
  if (/device or resource busy|resource busy|in use/.test(s)) return new CaptureError('device_busy', `The ${what} is in use by another program; close it and try again.`, 'busy');
  if (/cannot open display|can't open display|unable to open display/.test(s)) return new CaptureError('device_unavailable', `The display could not be opened; the agent must run inside a graphical session (DISPLAY).`, 'no_display');
  if (/no such file or directory|no such device|could not find|cannot open video device|could not enumerate|not found|invalid argument|input\/output error|connection refused/.test(s))
    return new CaptureError('device_unavailable', `The ${what} could not be opened; check that it is connected and try again.`, 'no_device');
  return new CaptureError('execution_failed', `ffmpeg could not capture from the ${what}.`, 'ffmpeg_failed');
}

/** The ffmpeg child-process backend. */
export class FfmpegBackend implements CaptureBackend {
  readonly name = 'ffmpeg';
  private open = 0;
  private openedTotal = 0;
  /** PIDs of the ffmpeg children running now (tests check none is left after a cancel). */
  readonly running = new Set<number>();
  private readonly platform: NodeJS.Platform;
  private readonly env: NodeJS.ProcessEnv;

  constructor(private readonly opts: FfmpegBackendOptions = {}) {
    this.platform = opts.platform ?? process.platform;
    this.env = opts.env ?? process.env;
  }

  get openCount(): number {
    return this.open;
  }

  get opened(): number {
    return this.openedTotal;
  }

  /** The configured ffmpeg executable. */
  get executable(): string {
    return this.opts.ffmpeg ?? 'ffmpeg';
  }

  async list(kind: DeviceKind, signal?: AbortSignal): Promise<DeviceInfo[]> {
    const configured = (this.opts.devices ?? [])
      .filter((d) => d.kind === kind)
      .map((d): DeviceInfo => ({ kind, id: d.id, label: d.label ?? d.id, ...(d.width && d.height ? { width: d.width, height: d.height, resolutions: [`${d.width}x${d.height}`] } : {}) }));
    if (this.opts.probe === false) return configured;
    const probed = (await this.probe(kind, signal)).filter((p) => !configured.some((c) => c.id === p.id));
    return [...configured, ...probed];
  }

  private async probe(kind: DeviceKind, signal?: AbortSignal): Promise<DeviceInfo[]> {
    const args = listArgs(this.platform);
    if (args) {
      // The listing "fails" by design (no input is opened): its device list is on stderr.
      const { stderr } = await this.run(args, signal).catch((e: unknown) => {
        if (e instanceof CaptureError && e.reason === 'ffmpeg_missing') return { stderr: '' };
        throw e;
      });
      const all = this.platform === 'darwin' ? parseAvfoundationList(stderr) : parseDshowList(stderr);
      return all.filter((d) => d.kind === kind);
    }
    return linuxDevices(kind, this.env, this.opts.sysRoot ?? '/');
  }

  private configuredFor(id: string): ConfiguredDevice | undefined {
    return (this.opts.devices ?? []).find((d) => d.id === id);
  }

  async capture(req: CaptureRequest, signal: AbortSignal, onProgress?: (p: CaptureProgress) => void): Promise<CaptureResult> {
    const kind = req.device.kind;
    const configured = this.configuredFor(req.device.id);
    if (!configured && this.platform === 'linux' && kind === 'screen' && !this.env['DISPLAY'] && this.env['WAYLAND_DISPLAY'])
      throw new CaptureError('permission_denied', 'This Wayland session does not let programs grab the screen without a portal; use the tray app (its capture window asks through the desktop portal) or an X11 session.', 'wayland');
    // What reaches `-i` is a capture device (the grant check said so before consent; the node may have changed since).
    const refused = configured ? undefined : await checkCaptureId(kind, req.device.id, this.platform, this.opts.sysRoot ? join(this.opts.sysRoot, 'sys') : '/sys');
    if (refused) throw new CaptureError('permission_denied', refused.message, refused.rule);
    const size = req.op === 'photo' && req.width && req.height && !configured ? { width: req.width, height: req.height } : undefined;
    const input = inputFor(req.device, this.platform, configured, size);
    const args = captureArgs(input, req, req.outPath);
    const totalMs = req.op === 'clip' || req.op === 'audio' ? req.durationMs : 0;
    let level: number | undefined;
    this.open++;
    this.openedTotal++;
    this.opts.onOpenChange?.();
    try {
      await this.run(args, signal, {
        onStdout: (block) => {
          const t = progressTimeMs(block);
          if (t !== undefined && totalMs) onProgress?.({ elapsedMs: Math.min(t, totalMs), totalMs, ...(level !== undefined ? { level } : {}) });
        },
        onStderrLine: (line) => {
          const l = peakLevel(line);
          if (l !== undefined) level = level === undefined ? l : Math.max(level * 0.5, l);
        },
        kind,
      });
    } finally {
      this.open--;
      this.opts.onOpenChange?.();
    }
    return { mediaType: mediaTypeOf(req), ...(totalMs ? { durationMs: totalMs } : {}) };
  }

  /**
   * Runs ffmpeg to its end. Rejects with a typed error on failure, or with the signal's reason on abort
   * (after the child has exited).
   */
  private run(
    args: string[],
    signal?: AbortSignal,
    hooks: { onStdout?: (text: string) => void; onStderrLine?: (line: string) => void; kind?: DeviceKind } = {},
  ): Promise<{ stderr: string }> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const child = spawn(this.executable, args, { stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true });
      const pid = child.pid;
      if (pid !== undefined) this.running.add(pid);
      let stderr = '';
      let partial = '';
      let spawnError: NodeJS.ErrnoException | undefined;
      const onAbort = () => child.kill('SIGKILL');
      signal?.addEventListener('abort', onAbort, { once: true });
      child.stdout.setEncoding('utf8').on('data', (d: string) => hooks.onStdout?.(d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        partial += d;
        const lines = partial.split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          if (/lavfi\.astats\.|^\[Parsed_ametadata[^\]]*\] frame:/.test(line)) hooks.onStderrLine?.(line);
          else if (stderr.length < 16_384) stderr += line + '\n';
        }
      });
      child.on('error', (e: NodeJS.ErrnoException) => (spawnError = e));
      child.on('close', (code) => {
        if (pid !== undefined) this.running.delete(pid);
        signal?.removeEventListener('abort', onAbort);
        if (signal?.aborted) return reject(signal.reason);
        if (spawnError) {
          if (spawnError.code === 'ENOENT' || spawnError.code === 'EACCES')
            return reject(new CaptureError('device_unavailable', `ffmpeg was not found ("${this.executable}"). ${installHint(this.platform)}`, 'ffmpeg_missing'));
          return reject(new CaptureError('execution_failed', 'ffmpeg could not be started.', 'ffmpeg_failed'));
        }
        if (code === 0 || !hooks.kind) return resolve({ stderr });
        reject(classifyFailure(stderr, hooks.kind, this.platform));
      });
    });
  }
}

/** Linux devices without opening any: video nodes from /dev and sysfs names, ALSA capture PCMs, PulseAudio, the X display. */
export function linuxDevices(kind: DeviceKind, env: NodeJS.ProcessEnv, root = '/'): DeviceInfo[] {
  if (kind === 'camera') {
    const dev = join(root, 'dev');
    let names: string[];
    try {
      names = readdirSync(dev).filter((n) => /^video\d+$/.test(n));
    } catch {
      return [];
    }
    return names
      .sort((a, b) => Number(a.slice(5)) - Number(b.slice(5)))
      .map((n) => {
        let label = n;
        try {
          label = readFileSync(join(root, 'sys', 'class', 'video4linux', n, 'name'), 'utf8').trim() || n;
        } catch {
          /* no sysfs name: the node name will do */
        }
        return { kind, id: `/dev/${n}`, label };
      });
  }
  if (kind === 'microphone') {
    const out: DeviceInfo[] = [];
    const runtime = env['XDG_RUNTIME_DIR'];
    if (env['PULSE_SERVER'] || (runtime && existsSync(join(runtime, 'pulse', 'native')))) out.push({ kind, id: 'pulse:default', label: 'Default input (PulseAudio/PipeWire)' });
    try {
      for (const line of readFileSync(join(root, 'proc', 'asound', 'pcm'), 'utf8').split('\n')) {
        const m = /^(\d+)-(\d+):\s*([^:]*):.*capture/.exec(line);
        if (m) out.push({ kind, id: `alsa:hw:${Number(m[1])},${Number(m[2])}`, label: m[3]!.trim() || `ALSA ${m[1]},${m[2]}` });
      }
    } catch {
      /* no ALSA */
    }
    return out;
  }
  const display = env['DISPLAY'];
  return display ? [{ kind, id: display, label: `X display ${display}` }] : [];
}
