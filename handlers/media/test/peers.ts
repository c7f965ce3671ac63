/**
 * Real peers for the media tests: ffprobe/ffmpeg to decode what was captured, Xvfb with a window painted
 * a known colour (an ffmpeg SDL window), and lavfi sources that stand in for capture devices (there is no
 * /dev/video* or sound card on these machines).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { ConfiguredDevice } from '../backends/ffmpeg-args.js';

const run = promisify(execFile);

/** lavfi sources standing in for capture devices (issue 17: "say so in the test"). `-re` makes them real-time like a device. */
export const LAVFI_CAMERA: ConfiguredDevice = { kind: 'camera', id: 'lavfi-camera', label: 'Test camera (lavfi testsrc)', format: 'lavfi', input: 'testsrc=size=640x480:rate=30', input_options: ['-re'], width: 640, height: 480 };
export const LAVFI_MIC: ConfiguredDevice = { kind: 'microphone', id: 'lavfi-mic', label: 'Test microphone (lavfi sine 440 Hz)', format: 'lavfi', input: 'sine=frequency=440:sample_rate=48000', input_options: ['-re'] };

/** What ffprobe says about a media file. */
export interface Probe {
  width?: number;
  height?: number;
  codec?: string;
  durationS?: number;
  formatName?: string;
}

/** Decodes the file's headers with ffprobe. */
export async function probe(path: string): Promise<Probe> {
  const { stdout } = await run('ffprobe', ['-v', 'error', '-show_entries', 'stream=width,height,codec_name,codec_type:format=duration,format_name', '-of', 'json', path]);
  const j = JSON.parse(stdout) as { streams: { width?: number; height?: number; codec_name?: string }[]; format: { duration?: string; format_name?: string } };
  const s = j.streams[0] ?? {};
  return {
    ...(s.width ? { width: s.width, height: s.height } : {}),
    ...(s.codec_name ? { codec: s.codec_name } : {}),
    ...(j.format.duration ? { durationS: Number(j.format.duration) } : {}),
    ...(j.format.format_name ? { formatName: j.format.format_name } : {}),
  };
}

/** Decodes the whole file (so a truncated file fails) and returns the duration ffmpeg measured, in seconds. */
export async function decodedDurationS(path: string): Promise<number> {
  const { stderr } = await run('ffmpeg', ['-hide_banner', '-nostdin', '-v', 'info', '-i', path, '-f', 'null', '-']);
  const times = [...stderr.matchAll(/time=(\d+):(\d+):(\d+(?:\.\d+)?)/g)];
  const last = times[times.length - 1];
  if (!last) throw new Error('ffmpeg decoded nothing');
  return Number(last[1]) * 3600 + Number(last[2]) * 60 + Number(last[3]);
}

/** Mean volume in dB by ffmpeg's volumedetect (-91 dB is digital silence). */
export async function meanVolumeDb(path: string): Promise<number> {
  const { stderr } = await run('ffmpeg', ['-hide_banner', '-nostdin', '-i', path, '-af', 'volumedetect', '-f', 'null', '-']);
  const m = /mean_volume:\s*(-?[\d.]+|-inf) dB/.exec(stderr);
  if (!m) throw new Error('volumedetect printed nothing');
  return m[1] === '-inf' ? -Infinity : Number(m[1]);
}

/** One RGB pixel of a picture, decoded by ffmpeg. */
export async function pixel(path: string, x: number, y: number): Promise<[number, number, number]> {
  const { stdout } = await run('ffmpeg', ['-v', 'error', '-i', path, '-vf', `crop=1:1:${x}:${y}`, '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'], { encoding: 'buffer' });
  return [stdout[0]!, stdout[1]!, stdout[2]!];
}

/** A free X display number (no lock file). */
function freeDisplay(): number {
  const taken = new Set(existsSync('/tmp') ? readdirSync('/tmp').filter((n) => /^\.X\d+-lock$/.test(n)).map((n) => Number(n.slice(2, -5))) : []);
  for (let n = 90 + Math.floor(Math.random() * 100); ; n++) if (!taken.has(n)) return n;
}

/** Xvfb (white root) with an ffmpeg SDL window of a known colour on it; stop() kills both by PID. */
export async function paintedDisplay(colour = '3366cc', size = { width: 1111, height: 777 }): Promise<{ display: string; window: { x: number; y: number; width: number; height: number }; stop(): Promise<void> }> {
  const n = freeDisplay();
  const display = `:${n}`;
  const xvfb = spawn('Xvfb', [display, '-screen', '0', `${size.width}x${size.height}x24`, '-wr', '-nolisten', 'tcp'], { stdio: 'ignore' });
  const exited = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));
  const stop = async (...cs: ChildProcess[]) => {
    for (const c of cs) {
      c.kill('SIGKILL');
      await exited(c);
    }
  };
  const deadline = Date.now() + 20_000;
  while (!existsSync(`/tmp/.X11-unix/X${n}`)) {
    if (Date.now() > deadline || xvfb.exitCode !== null) {
      await stop(xvfb);
      throw new Error('Xvfb did not start');
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const w = { width: 320, height: 240 };
  const sdl = spawn('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-re', '-f', 'lavfi', '-i', `color=c=0x${colour}:s=${w.width}x${w.height}:r=10`, '-f', 'sdl2', 'painted'], {
    stdio: 'ignore',
    env: { ...process.env, DISPLAY: display, SDL_RENDER_DRIVER: 'software' },
  });
  // The window manager-less server centres nothing: SDL centres the window itself.
  const win = { x: Math.floor((size.width - w.width) / 2), y: Math.floor((size.height - w.height) / 2), ...w };
  // Ready when the window shows its colour (SDL maps, then paints): poll with plain ffmpeg until then.
  const probeFile = join(mkdtempSync(join(tmpdir(), 'aios-xvfb-')), 'ready.png');
  try {
    for (;;) {
      await run('ffmpeg', ['-v', 'error', '-y', '-f', 'x11grab', '-i', display, '-frames:v', '1', probeFile]).catch(() => undefined);
      const p = existsSync(probeFile) ? await pixel(probeFile, win.x + 10, win.y + 10).catch(() => undefined) : undefined;
      if (p && p[2] > 150 && p[0] < 100) break;
      if (Date.now() > deadline + 20_000) {
        await stop(sdl, xvfb);
        throw new Error('the painted window did not appear');
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    rmSync(dirname(probeFile), { recursive: true, force: true });
  }
  return { display, window: win, stop: () => stop(sdl, xvfb) };
}
