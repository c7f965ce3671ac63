/**
 * ffmpeg command lines for each platform's capture devices (v4l2/avfoundation/dshow cameras, pulse/alsa/
 * avfoundation/dshow microphones, x11grab/gdigrab/avfoundation screens) and each output. Pure functions:
 * the process control is in ffmpeg-process.ts, so these are unit-tested without running anything.
 */
import type { CaptureOp, DeviceInfo, DeviceKind } from './types.js';

/** A device given in the handler's options: an ffmpeg input the operator chose (e.g. a lavfi source, an RTSP camera). */
export interface ConfiguredDevice {
  kind: DeviceKind;
  id: string;
  label?: string;
  /** ffmpeg input format (`-f`), e.g. `v4l2`, `lavfi`. */
  format: string;
  /** ffmpeg input (`-i`). */
  input: string;
  /** Extra input options placed before `-i`. */
  input_options?: string[];
  width?: number;
  height?: number;
}

/** Where a device's id says ffmpeg should read from. */
export interface FfmpegInput {
  format: string;
  input: string;
  options: string[];
}

/**
 * The ffmpeg input of a device on this platform. Ids: Linux cameras are device nodes (`/dev/video0`),
 * microphones `pulse:<source>` or `alsa:<card>`, screens X displays (`:0`); macOS uses avfoundation indexes
 * (`avf:0`), Windows dshow names (`dshow:<name>`) and `desktop`.
 */
export function inputFor(device: DeviceInfo, platform: NodeJS.Platform, configured?: ConfiguredDevice, size?: { width: number; height: number }): FfmpegInput {
  if (configured) return { format: configured.format, input: configured.input, options: [...(configured.input_options ?? [])] };
  const sizeOpt = size ? ['-video_size', `${size.width}x${size.height}`] : [];
  const id = device.id;
  if (platform === 'darwin') {
    const index = id.replace(/^avf:/, '');
    if (device.kind === 'camera') return { format: 'avfoundation', input: `${index}:none`, options: ['-framerate', '30', ...sizeOpt] };
    if (device.kind === 'microphone') return { format: 'avfoundation', input: `none:${index}`, options: [] };
    return { format: 'avfoundation', input: `${index}:none`, options: ['-capture_cursor', '1'] };
  }
  if (platform === 'win32') {
    const name = id.replace(/^dshow:/, '');
    if (device.kind === 'camera') return { format: 'dshow', input: `video=${name}`, options: sizeOpt };
    if (device.kind === 'microphone') return { format: 'dshow', input: `audio=${name}`, options: [] };
    return { format: 'gdigrab', input: 'desktop', options: [] };
  }
  if (device.kind === 'camera') return { format: 'v4l2', input: id, options: sizeOpt };
  if (device.kind === 'microphone') {
    const m = /^(pulse|alsa):(.+)$/.exec(id);
    return { format: m?.[1] ?? 'pulse', input: m?.[2] ?? id, options: [] };
  }
  // x11grab reads the whole root window unless told a size; the display's own size is what we want.
  return { format: 'x11grab', input: id, options: ['-draw_mouse', '0'] };
}

/** ffmpeg's `-q:v` for MJPEG (2 best … 31 worst) from a 1–100 quality. */
export function jpegQscale(quality: number): number {
  const q = Math.min(100, Math.max(1, quality));
  return Math.round(31 - ((q - 1) / 99) * 29);
}

/** Output options (after `-i`) for one capture, writing `outPath`. */
export function outputArgs(op: CaptureOp, outPath: string): string[] {
  switch (op.op) {
    case 'photo':
    case 'screenshot': {
      const filters: string[] = [];
      if (op.op === 'photo' && (op.width || op.height)) filters.push(`scale=${op.width ?? -2}:${op.height ?? -2}`);
      if (op.op === 'screenshot' && op.scale && op.scale !== 1) filters.push(`scale=trunc(iw*${op.scale}/2)*2:trunc(ih*${op.scale}/2)*2`);
      const codec = op.format === 'png' ? ['-c:v', 'png'] : ['-c:v', 'mjpeg', '-pix_fmt', 'yuvj420p', '-q:v', String(jpegQscale(op.quality ?? 90))];
      return [...(filters.length ? ['-vf', filters.join(',')] : []), '-frames:v', '1', ...codec, '-f', 'image2', '-update', '1', outPath];
    }
    case 'clip': {
      const filters = op.width || op.height ? ['-vf', `scale=${op.width ?? -2}:${op.height ?? -2}`] : [];
      const codec =
        op.format === 'webm'
          ? ['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '1M', '-f', 'webm']
          : ['-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', '-f', 'mp4'];
      return [...filters, '-an', '-t', seconds(op.durationMs), ...codec, outPath];
    }
    case 'audio': {
      // astats gives the level for progress; ametadata logs it (at info level: its own file output is
      // block-buffered and would only arrive at the end).
      const level = ['-af', 'astats=metadata=1:reset=5,ametadata=mode=print:key=lavfi.astats.Overall.Peak_level'];
      const codec =
        op.format === 'wav' ? ['-c:a', 'pcm_s16le', '-f', 'wav'] : op.format === 'opus' ? ['-c:a', 'libopus', '-f', 'ogg'] : ['-c:a', 'libopus', '-f', 'webm'];
      return ['-vn', ...level, '-t', seconds(op.durationMs), ...codec, outPath];
    }
  }
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(3);
}

/** The whole argument list: quiet, no stdin, machine-readable progress on stdout. */
export function captureArgs(input: FfmpegInput, op: CaptureOp, outPath: string): string[] {
  return ['-hide_banner', '-nostdin', '-y', '-loglevel', op.op === 'audio' ? 'info' : 'error', '-nostats', '-progress', 'pipe:1', ...input.options, '-f', input.format, '-i', input.input, ...outputArgs(op, outPath)];
}

/** Arguments that make ffmpeg list a platform's devices (macOS avfoundation, Windows dshow); none on Linux. */
export function listArgs(platform: NodeJS.Platform): string[] | undefined {
  if (platform === 'darwin') return ['-hide_banner', '-nostdin', '-f', 'avfoundation', '-list_devices', 'true', '-i', ''];
  if (platform === 'win32') return ['-hide_banner', '-nostdin', '-list_devices', 'true', '-f', 'dshow', '-i', 'dummy'];
  return undefined;
}

/** Parses `-f avfoundation -list_devices true` output (stderr) into devices. */
export function parseAvfoundationList(text: string): DeviceInfo[] {
  const out: DeviceInfo[] = [];
  let section: 'video' | 'audio' | undefined;
  for (const line of text.split(/\r?\n/)) {
    if (/AVFoundation video devices/.test(line)) section = 'video';
    else if (/AVFoundation audio devices/.test(line)) section = 'audio';
    else {
      const m = /\]\s*\[(\d+)\]\s*(.+?)\s*$/.exec(line);
      if (!m || !section) continue;
      const [, index, label] = m as unknown as [string, string, string];
      const kind: DeviceKind = section === 'audio' ? 'microphone' : /^Capture screen/i.test(label) ? 'screen' : 'camera';
      out.push({ kind, id: `avf:${index}`, label });
    }
  }
  return out;
}

/** Parses `-list_devices true -f dshow` output (stderr, `"Name" (video)` lines) into devices; screens are `desktop`. */
export function parseDshowList(text: string): DeviceInfo[] {
  const out: DeviceInfo[] = [];
  for (const line of text.split(/\r?\n/)) {
    const m = /\]\s*"([^"]+)"\s*\((video|audio)\)/.exec(line);
    if (!m) continue;
    const [, name, type] = m as unknown as [string, string, string];
    out.push({ kind: type === 'audio' ? 'microphone' : 'camera', id: `dshow:${name}`, label: name });
  }
  out.push({ kind: 'screen', id: 'desktop', label: 'Desktop (all displays)' });
  return out;
}

/** Reads the key=value blocks of `-progress pipe:1`: the output time so far in ms, when present. */
export function progressTimeMs(block: string): number | undefined {
  const m = /out_time_us=(\d+)/.exec(block);
  return m ? Math.floor(Number(m[1]) / 1000) : undefined;
}

/** Peak level (0..1) from an astats line printed by `ametadata`, when the line is one. */
export function peakLevel(line: string): number | undefined {
  const m = /lavfi\.astats\.Overall\.Peak_level=(-?[\d.]+|-inf)/.exec(line);
  if (!m) return undefined;
  if (m[1] === '-inf') return 0;
  return Math.min(1, Math.pow(10, Number(m[1]) / 20));
}
