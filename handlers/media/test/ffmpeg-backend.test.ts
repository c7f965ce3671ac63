/**
 * The ffmpeg backend against real ffmpeg. There is no camera or sound card on these machines, so lavfi
 * test sources stand in for the devices (configured devices: the same code path as a v4l2 node, with
 * `-f lavfi` instead of `-f v4l2`); the screen is a real X server (Xvfb) showing a window painted a known
 * colour. Every output is checked by decoding it (ffprobe, ffmpeg volumedetect, pixels).
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FfmpegBackend } from '../backends/ffmpeg-backend.js';
import { imageDims } from '../backends/image-dims.js';
import { CaptureError, type CaptureProgress, type DeviceInfo } from '../backends/types.js';
import { LAVFI_CAMERA, LAVFI_MIC, decodedDurationS, meanVolumeDb, paintedDisplay, pixel, probe } from './peers.js';

const cam: DeviceInfo = { kind: 'camera', id: LAVFI_CAMERA.id, label: 'cam' };
const mic: DeviceInfo = { kind: 'microphone', id: LAVFI_MIC.id, label: 'mic' };

describe('ffmpeg backend with lavfi sources standing in for the camera and the microphone', () => {
  let dir: string;
  const backend = new FfmpegBackend({ devices: [LAVFI_CAMERA, LAVFI_MIC], probe: false });
  const signal = () => new AbortController().signal;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'aios-ffmpeg-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('lists the configured devices with their size', async () => {
    assert.deepEqual(await backend.list('camera'), [{ kind: 'camera', id: 'lavfi-camera', label: LAVFI_CAMERA.label, width: 640, height: 480, resolutions: ['640x480'] }]);
    assert.deepEqual((await backend.list('microphone')).map((d) => d.id), ['lavfi-mic']);
    assert.deepEqual(await backend.list('screen'), []);
  });

  test('a 640×480 JPEG photo decodes as 640×480 MJPEG', async () => {
    const out = join(dir, 'p.jpg');
    const r = await backend.capture({ op: 'photo', format: 'jpeg', quality: 80, device: cam, outPath: out }, signal());
    assert.equal(r.mediaType, 'image/jpeg');
    const p = await probe(out);
    assert.deepEqual([p.width, p.height, p.codec], [640, 480, 'mjpeg']);
    assert.deepEqual(await imageDims(out), { width: 640, height: 480 }, 'the header reader agrees with ffprobe');
    assert.equal(backend.openCount, 0);
  });

  test('a PNG photo scaled to 320×240', async () => {
    const out = join(dir, 'p.png');
    await backend.capture({ op: 'photo', format: 'png', width: 320, height: 240, device: cam, outPath: out }, signal());
    const p = await probe(out);
    assert.deepEqual([p.width, p.height, p.codec], [320, 240, 'png']);
    assert.deepEqual(await imageDims(out), { width: 320, height: 240 });
  });

  test('a 2 s WebM clip decodes to 2 s of VP8, with progress along the way', async () => {
    const out = join(dir, 'c.webm');
    const seen: CaptureProgress[] = [];
    await backend.capture({ op: 'clip', format: 'webm', durationMs: 2000, device: cam, outPath: out }, signal(), (p) => seen.push(p));
    const p = await probe(out);
    assert.equal(p.codec, 'vp8');
    const d = await decodedDurationS(out);
    assert.ok(Math.abs(d - 2) < 0.2, `decoded ${d} s`);
    assert.ok(seen.length >= 2, 'progress came more than once');
    assert.ok(seen.every((s) => s.totalMs === 2000 && s.elapsedMs <= 2000));
    assert.ok(seen[seen.length - 1]!.elapsedMs > seen[0]!.elapsedMs, 'elapsed time grows');
  });

  test('an MP4 clip is H.264', async () => {
    const out = join(dir, 'c.mp4');
    await backend.capture({ op: 'clip', format: 'mp4', durationMs: 1000, width: 320, height: 240, device: cam, outPath: out }, signal());
    const p = await probe(out);
    assert.deepEqual([p.codec, p.width, p.height], ['h264', 320, 240]);
  });

  test('1.5 s of WAV audio: right duration, not silence, and the level is reported', async () => {
    const out = join(dir, 'a.wav');
    const seen: CaptureProgress[] = [];
    await backend.capture({ op: 'audio', format: 'wav', durationMs: 1500, device: mic, outPath: out }, signal(), (p) => seen.push(p));
    const d = await decodedDurationS(out);
    assert.ok(Math.abs(d - 1.5) < 0.1, `decoded ${d} s`);
    assert.ok((await meanVolumeDb(out)) > -40, 'the tone is there');
    assert.ok(seen.some((s) => (s.level ?? 0) > 0.05), 'a level above silence was reported');
  });

  test('Opus audio in Ogg', async () => {
    const out = join(dir, 'a.ogg');
    await backend.capture({ op: 'audio', format: 'opus', durationMs: 1000, device: mic, outPath: out }, signal());
    assert.equal((await probe(out)).codec, 'opus');
    assert.ok((await meanVolumeDb(out)) > -40);
  });

  test('abort stops ffmpeg at once: the call rejects with the reason, the child has exited, nothing is open', async () => {
    const out = join(dir, 'long.webm');
    const ac = new AbortController();
    const started = Date.now();
    const p = backend.capture({ op: 'clip', format: 'webm', durationMs: 30_000, device: cam, outPath: out }, ac.signal, () => ac.abort(new Error('stop now')));
    await assert.rejects(p, /stop now/);
    assert.equal(backend.openCount, 0, 'the device is closed when the promise settles');
    assert.equal(backend.running.size, 0, 'no ffmpeg child is left');
    assert.ok(Date.now() - started < 15_000, 'it did not run to the end');
  });

  test('ffmpeg missing → device_unavailable saying how to install it', async () => {
    const b = new FfmpegBackend({ ffmpeg: join(dir, 'no-such-ffmpeg'), devices: [LAVFI_CAMERA], probe: false });
    const e = await b.capture({ op: 'photo', format: 'jpeg', device: cam, outPath: join(dir, 'x.jpg') }, signal()).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof CaptureError);
    assert.equal(e.type, 'device_unavailable');
    assert.equal(e.reason, 'ffmpeg_missing');
    assert.match(e.message, /apt install ffmpeg/);
    assert.equal(b.openCount, 0);
  });

  test('a camera node that does not exist (real v4l2 path) → device_unavailable', async () => {
    const b = new FfmpegBackend({ platform: 'linux' });
    const e = await b.capture({ op: 'photo', format: 'jpeg', device: { kind: 'camera', id: '/dev/video93', label: 'none' }, outPath: join(dir, 'y.jpg') }, signal()).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof CaptureError, String(e));
    assert.equal(e.type, 'device_unavailable');
    assert.equal(e.reason, 'no_device');
    assert.doesNotMatch(e.message, /\/dev\/video93/, 'ffmpeg\'s own text is not passed on');
  });

  test('Wayland without X → permission_denied naming the way out', async () => {
    const b = new FfmpegBackend({ platform: 'linux', env: { WAYLAND_DISPLAY: 'wayland-0' } });
    const e = await b.capture({ op: 'screenshot', format: 'png', device: { kind: 'screen', id: ':0', label: 'x' }, outPath: join(dir, 'z.png') }, signal()).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof CaptureError);
    assert.equal(e.type, 'permission_denied');
    assert.match(e.message, /Wayland/);
    assert.equal(existsSync(join(dir, 'z.png')), false);
  });
});

describe('ffmpeg backend: screen capture of a real X server (Xvfb) with a window painted a known colour', () => {
  let x: Awaited<ReturnType<typeof paintedDisplay>>;
  let dir: string;
  before(async () => {
    x = await paintedDisplay('3366cc');
    dir = mkdtempSync(join(tmpdir(), 'aios-x11-'));
  });
  after(async () => {
    await x?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the display is listed, and a PNG screenshot has its size and the window\'s colour at the window', async () => {
    const b = new FfmpegBackend({ platform: 'linux', env: { DISPLAY: x.display } });
    const screens = await b.list('screen');
    assert.deepEqual(screens.map((s) => s.id), [x.display]);
    const out = join(dir, 's.png');
    await b.capture({ op: 'screenshot', format: 'png', device: screens[0]!, outPath: out }, new AbortController().signal);
    assert.deepEqual(await imageDims(out), { width: 1111, height: 777 });
    const inside = await pixel(out, x.window.x + 20, x.window.y + 20);
    const outside = await pixel(out, 20, 20);
    const near = (a: number[], b: number[]) => a.every((v, i) => Math.abs(v - b[i]!) <= 8);
    assert.ok(near(inside, [0x33, 0x66, 0xcc]), `window pixel ${inside.join(',')}`);
    assert.ok(near(outside, [255, 255, 255]), `root pixel ${outside.join(',')}`);
  });

  test('scale 0.5 gives half the size', async () => {
    const b = new FfmpegBackend({ platform: 'linux', env: { DISPLAY: x.display } });
    const out = join(dir, 's.jpg');
    await b.capture({ op: 'screenshot', format: 'jpeg', scale: 0.5, device: { kind: 'screen', id: x.display, label: 'x' }, outPath: out }, new AbortController().signal);
    assert.deepEqual(await imageDims(out), { width: 554, height: 388 });
  });
});
