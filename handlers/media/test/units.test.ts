/**
 * Unit tests of the media handler's logic without devices: ffmpeg command lines per platform, device-list
 * parsers (fed the text ffmpeg prints on macOS and Windows, which cannot run here), error classification,
 * picture headers, grant resolution, the provider protocol's validation, catalogues and manifest.
 */
import { test } from 'node:test';
import { until } from '../../../test/helpers/wait.js';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { captureArgs, inputFor, jpegQscale, parseAvfoundationList, parseDshowList, peakLevel, progressTimeMs } from '../backends/ffmpeg-args.js';
import { classifyFailure, linuxDevices } from '../backends/ffmpeg-backend.js';
import { dimsOf } from '../backends/image-dims.js';
import { ProviderHub, PROVIDER_METHODS, type ProviderConnection } from '../backends/provider-hub.js';
import { CaptureError, type CaptureBackend, type DeviceInfo } from '../backends/types.js';
import { MediaService } from '../media-service.js';
import { CATALOGUES } from '../messages.js';
import handler from '../index.js';
import { NO_GRANTS, type FunctionDefinition, type HandlerEnv, type HandlerInstance, type Logger } from '../../../src/sdk/index.js';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const cam = (id: string, label = id): DeviceInfo => ({ kind: 'camera', id, label });

test('ffmpeg inputs per platform: v4l2, avfoundation, dshow; pulse/alsa; x11grab/gdigrab', () => {
  assert.deepEqual(inputFor(cam('/dev/video0'), 'linux', undefined, { width: 640, height: 480 }), { format: 'v4l2', input: '/dev/video0', options: ['-video_size', '640x480'] });
  assert.deepEqual(inputFor(cam('avf:1'), 'darwin'), { format: 'avfoundation', input: '1:none', options: ['-framerate', '30'] });
  assert.deepEqual(inputFor(cam('dshow:USB Camera'), 'win32'), { format: 'dshow', input: 'video=USB Camera', options: [] });
  assert.deepEqual(inputFor({ kind: 'microphone', id: 'alsa:hw:1,0', label: '' }, 'linux'), { format: 'alsa', input: 'hw:1,0', options: [] });
  assert.deepEqual(inputFor({ kind: 'microphone', id: 'pulse:default', label: '' }, 'linux'), { format: 'pulse', input: 'default', options: [] });
  assert.deepEqual(inputFor({ kind: 'microphone', id: 'avf:0', label: '' }, 'darwin'), { format: 'avfoundation', input: 'none:0', options: [] });
  assert.deepEqual(inputFor({ kind: 'microphone', id: 'dshow:Mic (Realtek)', label: '' }, 'win32'), { format: 'dshow', input: 'audio=Mic (Realtek)', options: [] });
  assert.deepEqual(inputFor({ kind: 'screen', id: ':0', label: '' }, 'linux'), { format: 'x11grab', input: ':0', options: ['-draw_mouse', '0'] });
  assert.deepEqual(inputFor({ kind: 'screen', id: 'desktop', label: '' }, 'win32'), { format: 'gdigrab', input: 'desktop', options: [] });
  assert.deepEqual(inputFor({ kind: 'screen', id: 'avf:2', label: '' }, 'darwin'), { format: 'avfoundation', input: '2:none', options: ['-capture_cursor', '1'] });
});

test('ffmpeg outputs: one frame for photos, -t for clips and audio, the codec per format', () => {
  const i = { format: 'lavfi', input: 'testsrc', options: [] };
  const photo = captureArgs(i, { op: 'photo', format: 'jpeg', quality: 100, width: 320, height: 240 }, '/t/p.jpg');
  assert.deepEqual(photo.slice(photo.indexOf('-i')), ['-i', 'testsrc', '-vf', 'scale=320:240', '-frames:v', '1', '-c:v', 'mjpeg', '-pix_fmt', 'yuvj420p', '-q:v', '2', '-f', 'image2', '-update', '1', '/t/p.jpg']);
  assert.ok(photo.includes('-frames:v') && photo.includes('-nostdin') && photo.at(-1) === '/t/p.jpg');
  assert.equal(photo[photo.indexOf('-q:v') + 1], '2');
  const clip = captureArgs(i, { op: 'clip', format: 'mp4', durationMs: 60_000 }, '/t/c.mp4');
  assert.equal(clip[clip.indexOf('-t') + 1], '60.000');
  assert.ok(clip.includes('libx264') && clip.includes('-an'));
  const audio = captureArgs(i, { op: 'audio', format: 'opus', durationMs: 1500 }, '/t/a.ogg');
  assert.equal(audio[audio.indexOf('-t') + 1], '1.500');
  assert.ok(audio.includes('libopus') && audio.includes('ogg'));
  const shot = captureArgs(i, { op: 'screenshot', format: 'png', scale: 0.5 }, '/t/s.png');
  assert.match(shot[shot.indexOf('-vf') + 1]!, /^scale=trunc\(iw\*0\.5/);
  assert.deepEqual([jpegQscale(1), jpegQscale(100), jpegQscale(500)], [31, 2, 2]);
});

test('device lists printed by ffmpeg on macOS (avfoundation) and Windows (dshow)', () => {
  const mac = `[AVFoundation indev @ 0x7f] AVFoundation video devices:
[AVFoundation indev @ 0x7f] [0] FaceTime HD Camera
[AVFoundation indev @ 0x7f] [1] Capture screen 0
[AVFoundation indev @ 0x7f] AVFoundation audio devices:
[AVFoundation indev @ 0x7f] [0] MacBook Pro Microphone
: Input/output error`;
  assert.deepEqual(parseAvfoundationList(mac), [
    { kind: 'camera', id: 'avf:0', label: 'FaceTime HD Camera' },
    { kind: 'screen', id: 'avf:1', label: 'Capture screen 0' },
    { kind: 'microphone', id: 'avf:0', label: 'MacBook Pro Microphone' },
  ]);
  const win = `[dshow @ 000001] "Integrated Webcam" (video)
[dshow @ 000001]   Alternative name "@device_pnp_\\\\?\\usb#vid"
[dshow @ 000001] "Microphone Array (Realtek(R) Audio)" (audio)
dummy: Immediate exit requested`;
  assert.deepEqual(parseDshowList(win).map((d) => [d.kind, d.id]), [
    ['camera', 'dshow:Integrated Webcam'],
    ['microphone', 'dshow:Microphone Array (Realtek(R) Audio)'],
    ['screen', 'desktop'],
  ]);
});

test('progress and level lines', () => {
  assert.equal(progressTimeMs('frame=3\nout_time_us=1500000\nprogress=continue\n'), 1500);
  assert.equal(progressTimeMs('bitrate=N/A\n'), undefined);
  assert.ok(Math.abs(peakLevel('[Parsed_ametadata_1 @ 0x1] lavfi.astats.Overall.Peak_level=-6.020600')! - 0.5) < 0.01);
  assert.equal(peakLevel('lavfi.astats.Overall.Peak_level=-inf'), 0);
  assert.equal(peakLevel('frame:1 pts:1'), undefined);
});

test('ffmpeg failures become typed errors with the fix, never ffmpeg\'s own text', () => {
  const denied = classifyFailure('[video4linux2,v4l2 @ 0x1] Cannot open video device /dev/video0: Permission denied', 'camera', 'linux');
  assert.deepEqual([denied.type, denied.reason], ['permission_denied', 'os_refused']);
  assert.match(denied.message, /"video" group/);
  assert.doesNotMatch(denied.message, /\/dev\/video0/);
  assert.match(classifyFailure('Failed to authorize camera', 'camera', 'darwin').message, /Privacy & Security > Camera/);
  assert.match(classifyFailure('Access denied', 'microphone', 'win32').message, /Settings > Privacy & security > Microphone/);
  assert.equal(classifyFailure('Device or resource busy', 'camera', 'linux').type, 'device_busy');
  assert.equal(classifyFailure('Cannot open display :5, error 1', 'screen', 'linux').reason, 'no_display');
  assert.equal(classifyFailure('something odd', 'camera', 'linux').type, 'execution_failed');
});

test('Linux devices are listed from /dev, sysfs and /proc/asound without opening them', () => {
  const root = mkdtempSync(join(tmpdir(), 'aios-sys-'));
  try {
    mkdirSync(join(root, 'dev'));
    for (const n of ['video2', 'video0', 'vhci']) writeFileSync(join(root, 'dev', n), '');
    mkdirSync(join(root, 'sys/class/video4linux/video0'), { recursive: true });
    writeFileSync(join(root, 'sys/class/video4linux/video0/name'), 'HD Webcam C270\n');
    mkdirSync(join(root, 'proc/asound'), { recursive: true });
    writeFileSync(join(root, 'proc/asound/pcm'), '00-00: ALC892 Analog : ALC892 Analog : playback 1 : capture 1\n01-03: HDMI 0 : HDMI 0 : playback 1\n');
    assert.deepEqual(linuxDevices('camera', {}, root), [
      { kind: 'camera', id: '/dev/video0', label: 'HD Webcam C270' },
      { kind: 'camera', id: '/dev/video2', label: 'video2' },
    ]);
    assert.deepEqual(linuxDevices('microphone', { PULSE_SERVER: 'unix:/x' }, root).map((d) => d.id), ['pulse:default', 'alsa:hw:0,0']);
    assert.deepEqual(linuxDevices('screen', { DISPLAY: ':1' }, root), [{ kind: 'screen', id: ':1', label: 'X display :1' }]);
    assert.deepEqual(linuxDevices('screen', {}, root), []);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('picture headers: PNG IHDR and JPEG SOF', () => {
  const png = Buffer.alloc(24);
  png.writeUInt32BE(0x89504e47, 0);
  png.write('IHDR', 12, 'latin1');
  png.writeUInt32BE(1111, 16);
  png.writeUInt32BE(777, 20);
  assert.deepEqual(dimsOf(png), { width: 1111, height: 777 });
  // SOI, an APP0 segment of 4 bytes, then SOF0 with height 480 and width 640.
  const jpg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0xe0, 0x02, 0x80, 0x03]);
  assert.deepEqual(dimsOf(jpg), { width: 640, height: 480 });
  assert.equal(dimsOf(Buffer.from('GIF89a')), undefined);
});

/** A backend that lists fixed devices and counts opens (a null device backend for resolution tests). */
function nullBackend(devices: DeviceInfo[]): CaptureBackend & { opens: number } {
  return {
    name: 'null',
    opens: 0,
    openCount: 0,
    opened: 0,
    list: async (kind) => devices.filter((d) => d.kind === kind),
    async capture() {
      this.opens++;
      throw new CaptureError('execution_failed', 'null backend');
    },
  };
}

test('grant resolution: * and ids and labels; not granted → permission_denied, absent → device_unavailable', async () => {
  const svc = new MediaService(nullBackend([cam('/dev/video0', 'Front'), cam('/dev/video1', 'Back')]), new ProviderHub(), 'ffmpeg');
  assert.equal((await svc.resolve('camera', undefined, [{ id: '*' }])).device.id, '/dev/video0');
  assert.equal((await svc.resolve('camera', 'back', [{ id: '*' }])).device.id, '/dev/video1');
  assert.equal((await svc.resolve('camera', undefined, [{ id: 'Back' }])).device.id, '/dev/video1', 'the default is the first granted one');
  assert.equal((await svc.resolve('camera', 'shelf', [{ id: '/dev/video1', alias: 'shelf' }])).alias, 'shelf');
  const e1 = await svc.resolve('camera', '/dev/video0', [{ id: '/dev/video1' }]).catch((e: unknown) => e);
  assert.deepEqual([(e1 as CaptureError).type, (e1 as CaptureError).reason], ['permission_denied', 'not_granted']);
  const e2 = await svc.resolve('camera', '/dev/video7', [{ id: '*' }]).catch((e: unknown) => e);
  assert.deepEqual([(e2 as CaptureError).type, (e2 as CaptureError).reason], ['device_unavailable', 'no_device']);
  const e3 = await svc.resolve('camera', undefined, []).catch((e: unknown) => e);
  assert.match((e3 as CaptureError).message, /grants\.cameras/);
  assert.equal(svc.resolveCached('camera', 'Back', [{ id: '*' }])?.device.id, '/dev/video1', 'the lock name comes from the last listing');
});

/** Polls until `f` returns something (the hub opens the output file before it notifies the page). */
/** One fake WebSocket connection (the notify function identifies it, as the endpoint's does). */
function conn(): ProviderConnection & { sent: { method: string; params: Record<string, unknown> }[]; close(): void } {
  const closers: (() => void)[] = [];
  const sent: { method: string; params: Record<string, unknown> }[] = [];
  return { sent, notify: (method, params) => sent.push({ method, params: params as Record<string, unknown> }), onClose: (cb) => closers.push(cb), close: () => closers.forEach((c) => c()) };
}

test('provider protocol: attach, capture into the file in order, refuse strangers, detach fails the capture', async () => {
  const hub = new ProviderHub();
  const m = hub.methods();
  const a = conn();
  const other = conn();
  await assert.rejects(m[PROVIDER_METHODS.attach]!({ devices: [{ kind: 'tv', id: 'x' }] }, a), /camera, microphone or screen/);
  await m[PROVIDER_METHODS.attach]!({ name: 'page', devices: [{ kind: 'camera', id: 'camera-1', label: 'Cam' }] }, a);
  assert.deepEqual((await hub.list('camera')).map((d) => d.id), ['page:camera-1']);
  await assert.rejects(m[PROVIDER_METHODS.attach]!({ devices: [] }, { notify: a.notify }), /back channel/);
  const dir = mkdtempSync(join(tmpdir(), 'aios-hub-'));
  try {
    const out = join(dir, 'p.png');
    const ac = new AbortController();
    const p = hub.capture({ op: 'photo', format: 'png', device: { kind: 'camera', id: 'page:camera-1', label: 'Cam' }, outPath: out }, ac.signal);
    const req = (await until(() => a.sent.find((x) => x.method === 'media/notification.capture'))).params;
    assert.deepEqual([req['kind'], req['device_id'], req['op'], req['format']], ['camera', 'camera-1', 'photo', 'png']);
    assert.equal(JSON.stringify(req).includes(dir), false, 'the page never learns local paths');
    const rid = req['request_id'];
    await assert.rejects(m[PROVIDER_METHODS.chunk]!({ request_id: rid, seq: 0, data: 'AAAA' }, other), /No such capture request/, 'another connection cannot feed this capture');
    await assert.rejects(m[PROVIDER_METHODS.chunk]!({ request_id: rid, seq: 1, data: 'AAAA' }, a), /Expected chunk 0/);
    await m[PROVIDER_METHODS.event]!({ request_id: rid, event: 'opened' }, a);
    assert.equal(hub.openCount, 1);
    await m[PROVIDER_METHODS.chunk]!({ request_id: rid, seq: 0, data: Buffer.from('hello ').toString('base64') }, a);
    await m[PROVIDER_METHODS.chunk]!({ request_id: rid, seq: 1, data: Buffer.from('world').toString('base64') }, a);
    await m[PROVIDER_METHODS.event]!({ request_id: rid, event: 'closed' }, a);
    await m[PROVIDER_METHODS.done]!({ request_id: rid, media_type: 'image/png', width: 2, height: 3 }, a);
    assert.deepEqual(await p, { mediaType: 'image/png', width: 2, height: 3 });
    assert.equal(readFileSync(out, 'utf8'), 'hello world');
    assert.equal(hub.openCount, 0);

    // A page that claims another type is refused.
    const p2 = hub.capture({ op: 'photo', format: 'jpeg', device: { kind: 'camera', id: 'page:camera-1', label: 'Cam' }, outPath: join(dir, 'q.jpg') }, new AbortController().signal);
    const rid2 = (await until(() => a.sent.filter((x) => x.method === 'media/notification.capture')[1])).params['request_id'];
    await m[PROVIDER_METHODS.done]!({ request_id: rid2, media_type: 'text/html' }, a);
    await assert.rejects(p2, (e: unknown) => e instanceof CaptureError && e.reason === 'wrong_format');

    // The page going away fails a capture in progress with device_unavailable.
    const p3 = hub.capture({ op: 'clip', format: 'webm', durationMs: 5000, device: { kind: 'camera', id: 'page:camera-1', label: 'Cam' }, outPath: join(dir, 'c.webm') }, new AbortController().signal);
    await until(() => a.sent.filter((x) => x.method === 'media/notification.capture')[2]);
    a.close();
    await assert.rejects(p3, (e: unknown) => e instanceof CaptureError && e.type === 'device_unavailable' && e.reason === 'provider_gone');
    assert.deepEqual(hub.attached(), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('provider: a cancel sends stop to the page and waits for it to close the device', async () => {
  const hub = new ProviderHub();
  const m = hub.methods();
  const a = conn();
  await m[PROVIDER_METHODS.attach]!({ devices: [{ kind: 'microphone', id: 'mic' }] }, a);
  const dir = mkdtempSync(join(tmpdir(), 'aios-hub-'));
  try {
    const ac = new AbortController();
    const p = hub.capture({ op: 'audio', format: 'wav', durationMs: 60_000, device: { kind: 'microphone', id: 'page:mic', label: 'm' }, outPath: join(dir, 'a.wav') }, ac.signal);
    const rid = (await until(() => a.sent[0])).params['request_id'];
    await m[PROVIDER_METHODS.event]!({ request_id: rid, event: 'opened' }, a);
    let settled = false;
    void p.catch(() => (settled = true));
    ac.abort(new Error('cancelled'));
    assert.equal(a.sent.at(-1)!.method, 'media/notification.stop');
    // A "nothing happens within 50 ms" check: only the page's 'closed' below (or the hub's 3 s fallback,
    // sixty times longer) may settle the call, so any settling now would be the bug this test is for.
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(settled, false, 'the call waits for the page to close the microphone');
    await m[PROVIDER_METHODS.event]!({ request_id: rid, event: 'closed' }, a);
    await assert.rejects(p, /cancelled/);
    assert.equal(hub.openCount, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('catalogues: en and zh-CN have the same keys, namespaced media.*, with the same placeholders', () => {
  const en = CATALOGUES['en']!;
  const zh = CATALOGUES['zh-CN']!;
  assert.deepEqual(Object.keys(zh).sort(), Object.keys(en).sort());
  for (const k of Object.keys(en)) {
    assert.ok(k.startsWith('media.'), k);
    const ph = (s: string) => [...s.matchAll(/\{(\w+)\}/g)].map((x) => x[1]).sort();
    assert.deepEqual(ph(zh[k]!), ph(en[k]!), k);
  }
});

const nullLog: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => nullLog };

test('manifest: id is the folder, capabilities and levels match the descriptors; captures always ask', async () => {
  const y = parse(readFileSync(join(here, 'tool.aios.yaml'), 'utf8')) as { tool: { id: string }; capabilities: { id: string; permission: string; confirmation: string }[] };
  assert.equal(y.tool.id, 'media');
  assert.equal(handler.name, 'media');
  const env: HandlerEnv = { grants: NO_GRANTS, options: { probe: false }, dataDir: tmpdir(), log: nullLog, appVersion: '0', listFunctions: () => [] };
  const fns = ((await handler.create(env)) as HandlerInstance).functions as FunctionDefinition[];
  const byId = new Map(fns.map((f) => [f.descriptor.id, f.descriptor]));
  assert.deepEqual(y.capabilities.map((c) => c.id).sort(), [...byId.keys()].sort());
  for (const c of y.capabilities) {
    assert.equal(byId.get(c.id)!.permission_level, c.permission, c.id);
    assert.equal(byId.get(c.id)!.confirmation, c.confirmation, c.id);
  }
  for (const id of ['camera.capture_photo', 'camera.record_clip', 'microphone.record', 'screen.capture']) assert.equal(byId.get(id)!.confirmation, 'always');
  assert.throws(() => handler.create({ ...env, options: { backend: 'magic' } }), /handlers\.media is not valid/);
});

test('the handler imports only the SDK entry from src/', () => {
  const files = ['index.ts', 'functions.ts', 'grants.ts', 'media-service.ts', 'messages.ts', 'backends/types.ts', 'backends/ffmpeg-args.ts', 'backends/ffmpeg-backend.ts', 'backends/provider-hub.ts', 'backends/image-dims.ts'];
  for (const f of files) {
    const text = readFileSync(join(here, f), 'utf8');
    const srcImports = [...text.matchAll(/from '((?:\.\.\/)+src\/[^']+)'/g)].map((x) => x[1]);
    if (f.startsWith('backends/') || f === 'media-service.ts' || f === 'messages.ts') assert.deepEqual(srcImports, [], `${f} has no SDK dependency`);
    else for (const i of srcImports) assert.equal(i, '../../src/sdk/index.js', `${f} imports ${i}`);
  }
});
