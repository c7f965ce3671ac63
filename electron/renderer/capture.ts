/**
 * The capture page: a capture provider for the agent (handlers/media/backends/provider-hub.ts describes
 * the protocol). It attaches over `WS /rpc` on its own origin with the local token (from #token=…, as the
 * tray page does), lists devices without opening them, and opens a device only when the agent sends a
 * capture request (which the user has confirmed in the agent's prompt). Captured bytes go to the agent
 * only, as base64 chunks; nothing is stored here. In the tray it runs in a hidden, sandboxed window.
 * scripts/build-renderer.mjs bundles it into capture.js.
 */
import { applyStaticStrings, loadLocale, pickLocale, t, type PageLocale } from './catalogue.js';
import { RpcSocket } from './control-client.js';
import { $ } from './dom.js';
import { takeToken } from './transports.js';

declare global {
  interface Window {
    /** Open devices, for the page's state line and for tests. */
    aiosCapture?: typeof stats;
  }
}

/** A device as the agent knows it. */
interface Device {
  kind: 'camera' | 'microphone' | 'screen';
  id: string;
  label: string;
  deviceId?: string;
}

/** A capture request (`media/notification.capture`), as provider-hub.ts sends it. */
interface CaptureRequest {
  request_id: string;
  kind: 'camera' | 'microphone' | 'screen';
  device_id: string;
  op: 'photo' | 'screenshot' | 'clip' | 'audio';
  format?: string;
  width?: number;
  height?: number;
  scale?: number;
  quality?: number;
  duration_ms: number;
}

/** A running capture. */
interface Job {
  stopped: boolean;
  onStop?: () => void;
}

/** The provider methods the page calls (handlers/media/backends/provider-hub.ts). */
type ProviderMethod = 'media.provider.attach' | 'media.provider.devices' | 'media.provider.event' | 'media.provider.progress' | 'media.provider.chunk' | 'media.provider.done' | 'media.provider.fail';

const TOKEN_KEY = 'aios-capture-token';
const CHUNK = 384 * 1024;
const stats = { open: 0, opened: 0, attached: false };
window.aiosCapture = stats;
const active = new Map<string, Job>();
let socket: RpcSocket | undefined;

function call(method: ProviderMethod, params: object): Promise<unknown> {
  if (!socket) return Promise.reject(new Error('not connected'));
  return socket.call(method, params);
}

function setState(id: string, key: string, state: string): void {
  const el = $(id);
  el.textContent = t(key);
  el.dataset['state'] = state;
}

// ------------------------------------------------------------------ devices
const KIND: Record<string, 'camera' | 'microphone' | undefined> = { videoinput: 'camera', audioinput: 'microphone' };
/** Devices with ids stable across permission grants: `camera-1`, `microphone-1`, and one `screen`. */
async function listDevices(): Promise<Device[]> {
  const all = navigator.mediaDevices ? await navigator.mediaDevices.enumerateDevices() : [];
  const out: Device[] = [];
  const count = { camera: 0, microphone: 0 };
  for (const d of all) {
    const kind = KIND[d.kind];
    if (!kind) continue;
    count[kind]++;
    out.push({ kind, id: `${kind}-${count[kind]}`, label: d.label || t(`ui.capture.device.${kind}`, { n: count[kind] }), deviceId: d.deviceId });
  }
  if (navigator.mediaDevices && 'getDisplayMedia' in navigator.mediaDevices) out.push({ kind: 'screen', id: 'screen', label: t('ui.capture.device.screen') });
  return out;
}
const wire = (list: Device[]): Omit<Device, 'deviceId'>[] => list.map(({ kind, id, label }) => ({ kind, id, label }));

async function constraintFor(kind: Device['kind'], id: string): Promise<MediaTrackConstraints> {
  const d = (await listDevices()).find((x) => x.kind === kind && x.id === id);
  if (!d) throw Object.assign(new Error('no such device'), { name: 'NotFoundError' });
  return d.deviceId && d.deviceId !== 'default' ? { deviceId: { exact: d.deviceId } } : {};
}

// ------------------------------------------------------------------ capture helpers
function opened(rid: string, stream: MediaStream): () => void {
  stats.open++;
  stats.opened++;
  setState('capture-state', 'ui.capture.state.capturing', 'capturing');
  void call('media.provider.event', { request_id: rid, event: 'opened' }).catch(() => undefined);
  let closed = false;
  return () => {
    if (closed) return;
    closed = true;
    for (const track of stream.getTracks()) track.stop();
    stats.open--;
    if (!stats.open) setState('capture-state', 'ui.capture.state.idle', 'idle');
    void call('media.provider.event', { request_id: rid, event: 'closed' }).catch(() => undefined);
  };
}

function toBase64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

async function send(rid: string, blob: Blob, meta: object, job: Job): Promise<void> {
  const bytes = new Uint8Array(await blob.arrayBuffer());
  for (let seq = 0, off = 0; off < bytes.length; seq++, off += CHUNK) {
    if (job.stopped) return;
    await call('media.provider.chunk', { request_id: rid, seq, data: toBase64(bytes.subarray(off, off + CHUNK)) });
  }
  if (!job.stopped) await call('media.provider.done', { request_id: rid, ...meta });
}

async function frameOf(stream: MediaStream, width: number, height: number): Promise<HTMLCanvasElement> {
  const video = document.createElement('video');
  video.muted = true;
  video.playsInline = true;
  video.srcObject = stream;
  await video.play();
  // Wait for a decoded frame with a size (the first callbacks can come before the camera delivers one).
  while (!video.videoWidth) await new Promise((r) => requestAnimationFrame(r));
  await new Promise<void>((r) => ('requestVideoFrameCallback' in video ? video.requestVideoFrameCallback(() => r()) : setTimeout(r, 100)));
  const w = width || (height ? Math.round((video.videoWidth * height) / video.videoHeight) : video.videoWidth);
  const h = height || (width ? Math.round((video.videoHeight * width) / video.videoWidth) : video.videoHeight);
  const canvas = document.createElement('canvas');
  canvas.width = w;
  canvas.height = h;
  canvas.getContext('2d')!.drawImage(video, 0, 0, w, h);
  video.srcObject = null;
  return canvas;
}

const toBlob = (canvas: HTMLCanvasElement, type: string, quality: number): Promise<Blob> =>
  new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('encode failed'))), type, quality));

function sleepOrStop(ms: number, job: Job): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    job.onStop = () => {
      clearTimeout(timer);
      resolve();
    };
  });
}

/** Records `stream` with MediaRecorder for `ms`, reporting progress each second (and the level for audio). */
async function record(rid: string, stream: MediaStream, mimeType: string, ms: number, job: Job, levelOf?: () => number): Promise<{ blob: Blob; durationMs: number }> {
  if (!MediaRecorder.isTypeSupported(mimeType)) throw Object.assign(new Error('format not supported'), { name: 'NotSupportedError' });
  const rec = new MediaRecorder(stream, { mimeType });
  const parts: Blob[] = [];
  rec.ondataavailable = (e) => {
    if (e.data.size) parts.push(e.data);
  };
  const stopped = new Promise((r) => (rec.onstop = r));
  const started = performance.now();
  rec.start(1000);
  const tick = setInterval(() => {
    const level = levelOf ? levelOf() : undefined;
    void call('media.provider.progress', { request_id: rid, elapsed_ms: Math.round(performance.now() - started), ...(level !== undefined ? { level } : {}) }).catch(() => undefined);
  }, 1000);
  await sleepOrStop(ms, job);
  clearInterval(tick);
  rec.stop();
  await stopped;
  return { blob: new Blob(parts, { type: mimeType.split(';')[0] }), durationMs: Math.round(performance.now() - started) };
}

/** Peak level 0..1 of an audio stream, from an AnalyserNode. */
function levelMeter(stream: MediaStream): { read(): number; close(): void } {
  const ctx = new AudioContext();
  const an = ctx.createAnalyser();
  an.fftSize = 2048;
  ctx.createMediaStreamSource(stream).connect(an);
  const buf = new Float32Array(an.fftSize);
  let peak = 0;
  const timer = setInterval(() => {
    an.getFloatTimeDomainData(buf);
    for (const v of buf) peak = Math.max(peak, Math.abs(v));
  }, 100);
  return {
    read() {
      const p = peak;
      peak = 0;
      return Math.min(1, p);
    },
    close() {
      clearInterval(timer);
      void ctx.close();
    },
  };
}

/** Records PCM for `ms` and encodes it as a 16-bit WAV file. */
async function recordWav(rid: string, stream: MediaStream, ms: number, job: Job, meter: { read(): number }): Promise<{ blob: Blob; durationMs: number }> {
  const ctx = new AudioContext();
  const src = ctx.createMediaStreamSource(stream);
  const proc = ctx.createScriptProcessor(4096, 1, 1);
  const chunks: Float32Array[] = [];
  let frames = 0;
  const want = Math.round((ms / 1000) * ctx.sampleRate);
  proc.onaudioprocess = (e) => {
    if (frames >= want) return;
    const d = e.inputBuffer.getChannelData(0).slice(0, want - frames);
    chunks.push(d);
    frames += d.length;
  };
  src.connect(proc);
  proc.connect(ctx.destination);
  const started = performance.now();
  const tick = setInterval(() => {
    void call('media.provider.progress', { request_id: rid, elapsed_ms: Math.round((frames / ctx.sampleRate) * 1000), level: meter.read() }).catch(() => undefined);
  }, 1000);
  while (frames < want && !job.stopped && performance.now() - started < ms + 10_000) await sleepOrStop(50, job);
  clearInterval(tick);
  src.disconnect();
  proc.disconnect();
  const rate = ctx.sampleRate;
  await ctx.close();
  const pcm = new DataView(new ArrayBuffer(44 + frames * 2));
  const w = (o: number, s: string): void => [...s].forEach((c, i) => pcm.setUint8(o + i, c.charCodeAt(0)));
  w(0, 'RIFF');
  pcm.setUint32(4, 36 + frames * 2, true);
  w(8, 'WAVEfmt ');
  pcm.setUint32(16, 16, true);
  pcm.setUint16(20, 1, true);
  pcm.setUint16(22, 1, true);
  pcm.setUint32(24, rate, true);
  pcm.setUint32(28, rate * 2, true);
  pcm.setUint16(32, 2, true);
  pcm.setUint16(34, 16, true);
  w(36, 'data');
  pcm.setUint32(40, frames * 2, true);
  let off = 44;
  for (const c of chunks)
    for (const v of c) {
      pcm.setInt16(off, Math.max(-1, Math.min(1, v)) * 0x7fff, true);
      off += 2;
    }
  return { blob: new Blob([pcm.buffer], { type: 'audio/wav' }), durationMs: Math.round((frames / rate) * 1000) };
}

const ERROR_WORD: Record<string, string> = { NotAllowedError: 'not_allowed', SecurityError: 'not_allowed', NotFoundError: 'not_found', OverconstrainedError: 'not_found', NotReadableError: 'busy', AbortError: 'busy' };

function scaled(canvas: HTMLCanvasElement, s: number): HTMLCanvasElement {
  const c = document.createElement('canvas');
  c.width = Math.max(1, Math.round(canvas.width * s));
  c.height = Math.max(1, Math.round(canvas.height * s));
  c.getContext('2d')!.drawImage(canvas, 0, 0, c.width, c.height);
  return c;
}

async function capture(req: CaptureRequest): Promise<void> {
  const rid = req.request_id;
  const job: Job = { stopped: false };
  active.set(rid, job);
  let close = (): void => {};
  try {
    let stream: MediaStream;
    if (req.kind === 'screen') stream = await navigator.mediaDevices.getDisplayMedia({ video: true, audio: false });
    else if (req.kind === 'camera') stream = await navigator.mediaDevices.getUserMedia({ video: { ...(await constraintFor('camera', req.device_id)), ...(req.width ? { width: { ideal: req.width } } : {}), ...(req.height ? { height: { ideal: req.height } } : {}) } });
    else stream = await navigator.mediaDevices.getUserMedia({ audio: await constraintFor('microphone', req.device_id) });
    close = opened(rid, stream);
    if (job.stopped) return;
    if (req.op === 'photo' || req.op === 'screenshot') {
      const canvas = req.op === 'screenshot' && req.scale ? scaled(await frameOf(stream, 0, 0), req.scale) : await frameOf(stream, req.width || 0, req.height || 0);
      close();
      const type = req.format === 'png' ? 'image/png' : 'image/jpeg';
      const blob = await toBlob(canvas, type, (req.quality || 90) / 100);
      await send(rid, blob, { media_type: type, width: canvas.width, height: canvas.height }, job);
    } else if (req.op === 'clip') {
      const mime = req.format === 'mp4' ? 'video/mp4' : 'video/webm;codecs=vp8';
      const { blob, durationMs } = await record(rid, stream, mime, req.duration_ms, job);
      const settings = stream.getVideoTracks()[0]?.getSettings() ?? {};
      close();
      if (!job.stopped) await send(rid, blob, { media_type: mime.split(';')[0], duration_ms: durationMs, ...(settings.width ? { width: settings.width, height: settings.height } : {}) }, job);
    } else {
      const meter = levelMeter(stream);
      try {
        const r = req.format === 'wav' ? await recordWav(rid, stream, req.duration_ms, job, meter) : await record(rid, stream, req.format === 'opus' ? 'audio/ogg;codecs=opus' : 'audio/webm;codecs=opus', req.duration_ms, job, () => meter.read());
        close();
        const type = req.format === 'wav' ? 'audio/wav' : req.format === 'opus' ? 'audio/ogg' : 'audio/webm';
        if (!job.stopped) await send(rid, r.blob, { media_type: type, duration_ms: r.durationMs }, job);
      } finally {
        meter.close();
      }
    }
  } catch (e) {
    if (!job.stopped) void call('media.provider.fail', { request_id: rid, error: ERROR_WORD[(e as Error | undefined)?.name ?? ''] || 'failed' }).catch(() => undefined);
  } finally {
    close();
    active.delete(rid);
  }
}

function stop(rid: string): void {
  const job = active.get(rid);
  if (!job) return;
  job.stopped = true;
  job.onStop?.();
}

// ------------------------------------------------------------------ connection
function connect(token: string): void {
  setState('provider-state', 'ui.capture.provider.connecting', 'connecting');
  socket = new RpcSocket(location.origin, token, {
    async open() {
      try {
        await call('media.provider.attach', { name: 'capture page', devices: wire(await listDevices()) });
        stats.attached = true;
        setState('provider-state', 'ui.capture.provider.attached', 'attached');
      } catch (e) {
        $('error').hidden = false;
        $('error').textContent = t('ui.capture.error.attach', { message: (e as Error).message });
      }
    },
    notification(method, params) {
      if (method === 'media/notification.capture') void capture(params as CaptureRequest);
      else if (method === 'media/notification.stop') stop((params as { request_id: string }).request_id);
    },
    close() {
      stats.attached = false;
      for (const rid of active.keys()) stop(rid);
      setState('provider-state', 'ui.capture.provider.disconnected', 'disconnected');
      setTimeout(() => connect(token), 1000);
    },
  });
}

async function main(): Promise<void> {
  navigator.mediaDevices?.addEventListener('devicechange', async () => {
    if (stats.attached) void call('media.provider.devices', { devices: wire(await listDevices()) }).catch(() => undefined);
  });
  // A page without its catalogue still captures: its built-in English stays and the state lines show keys.
  const locale: PageLocale = pickLocale();
  await loadLocale(locale).then(
    () => {
      document.documentElement.lang = locale === 'zh-CN' ? 'zh-CN' : 'en';
      applyStaticStrings();
    },
    () => undefined,
  );
  const token = takeToken(TOKEN_KEY);
  if (!token) {
    $('error').hidden = false;
    $('error').textContent = t('ui.capture.error.no_token');
  } else connect(token);
}

void main();
