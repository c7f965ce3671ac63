/**
 * The media functions through a CLI-started bridge and agent (`aios-device bridge`, `aios-device run`),
 * headless ffmpeg backend. lavfi sources stand in for the camera and the microphone (no capture devices
 * on these machines; configured under handlers.media.devices, the same code path as a device node).
 * Prompts are answered through the local endpoint's control API, as the tray does.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BlobRef } from '../../../src/sdk/index.js';
import { newCallId } from '../../../src/protocol/call-id.js';
import { until } from '../../../test/helpers/stack.js';
import { LAVFI_CAMERA, LAVFI_MIC, decodedDurationS, meanVolumeDb, probe } from './peers.js';
import { mediaStack } from './stack.js';

type Stack = Awaited<ReturnType<typeof mediaStack>>;
const REQUESTER = { kind: 'agent', id: 'agt_shelf', name: 'Shelf assistant' };

describe('media through the CLI-started bridge and agent, ffmpeg backend on lavfi stand-ins', () => {
  let s: Stack;
  let out: string;
  before(async () => {
    out = mkdtempSync(join(tmpdir(), 'aios-media-out-'));
    s = await mediaStack({
      grants: { cameras: ['lavfi-camera'], microphones: ['*'] },
      handlers: { media: { backend: 'ffmpeg', probe: false, devices: [LAVFI_CAMERA, LAVFI_MIC, { ...LAVFI_CAMERA, id: 'lavfi-other', label: 'Ungranted camera' }] } },
    });
  });
  after(async () => {
    await s?.stop();
    rmSync(out, { recursive: true, force: true });
  });
  // Captures are written into the call's private temp folder (ctx.tempDir, under <data_dir>/tmp/calls).
  const mediaTemps = () => s.tempFiles();

  test('camera.list names the cameras and which one is shared; it does not ask', async () => {
    const r = await s.client.call('camera.list', {});
    assert.equal(r.record.outcome?.state, 'completed');
    assert.equal(r.record.outcome?.confirmation?.required, false);
    const cams = (r.record.outcome?.output as { cameras: { id: string; granted: boolean; backend: string }[] }).cameras;
    assert.deepEqual(cams.map((c) => [c.id, c.granted, c.backend]), [['lavfi-camera', true, 'ffmpeg'], ['lavfi-other', false, 'ffmpeg']]);
  });

  test('capture_photo asks naming the camera and size; allowed, the blob decodes as a 640×480 JPEG', async () => {
    const before = await s.mediaStatus();
    const call_id = newCallId();
    const call = s.client.call('camera.capture_photo', { camera: 'lavfi-camera' }, { call_id, wait: true, confirm_timeout_ms: 60_000, requester: REQUESTER });
    const p = await s.prompt(call_id);
    assert.match(String(p.sentence), /Take a photo with Test camera \(lavfi testsrc\) \(its own size, JPEG\)/);
    assert.equal((await s.mediaStatus()).opened, before.opened, 'nothing is opened while the prompt is up');
    await s.answer(p, 'allow_once');
    const o = (await call).record.outcome!;
    assert.equal(o.state, 'completed', JSON.stringify(o.error));
    const res = o.output as { photo: BlobRef; width: number; height: number; media_type: string; size: number; sha256: string };
    assert.deepEqual([res.width, res.height, res.media_type], [640, 480, 'image/jpeg']);
    assert.equal(res.size, res.photo.size);
    assert.equal(res.sha256, res.photo.sha256);
    const file = join(out, 'photo.jpg');
    await s.download(res.photo, file);
    const pr = await probe(file);
    assert.deepEqual([pr.width, pr.height, pr.codec], [640, 480, 'mjpeg']);
    const after = await s.mediaStatus();
    assert.equal(after.opened, before.opened + 1);
    assert.equal(after.open, 0);
    assert.deepEqual(mediaTemps(), [], 'no capture file is left behind');
    assert.doesNotMatch(s.agentLog(), /\/9j\/|data:image/, 'no picture bytes in the agent log');
  });

  test('Deny ends rejected/user_rejected and no device is opened', async () => {
    const before = await s.mediaStatus();
    const call_id = newCallId();
    const call = s.client.call('camera.capture_photo', {}, { call_id, wait: true, confirm_timeout_ms: 60_000, requester: REQUESTER });
    await s.answer(await s.prompt(call_id), 'deny');
    const o = (await call).record.outcome!;
    assert.equal(o.state, 'rejected');
    assert.equal(o.error?.type, 'user_rejected');
    const after = await s.mediaStatus();
    assert.deepEqual([after.opened, after.open], [before.opened, 0], 'the backend never opened the camera');
  });

  test('record_clip: the status says a capture runs and who asked; cancel stops ffmpeg at once and leaves nothing', async () => {
    const call_id = newCallId();
    const call = s.client.call('camera.record_clip', { duration_s: 30 }, { call_id, wait: false, confirm_timeout_ms: 60_000, requester: REQUESTER });
    const p = await s.prompt(call_id);
    assert.match(String(p.sentence), /Record 30 seconds of video from Test camera/);
    await s.answer(p, 'allow_once');
    await call;
    const st = await until(async () => {
      const m = await s.mediaStatus();
      return m.open === 1 && m.capturing.length === 1 ? m : undefined;
    }, 20_000, 'the capture to run');
    assert.deepEqual(st!.capturing.map((c) => [c.kind, c.function, c.requester]), [['camera', 'camera.record_clip', 'Shelf assistant']]);
    await until(() => mediaTemps().length === 1, 10_000, 'the partial clip file');
    await s.client.cancel(call_id);
    const r = await s.client.waitTerminal(call_id, 20_000);
    assert.equal(r.outcome?.state, 'cancelled');
    const m = await s.mediaStatus();
    assert.deepEqual([m.open, m.capturing.length], [0, 0], 'the camera is closed when the call has ended');
    assert.deepEqual(mediaTemps(), [], 'the partial clip is gone');
  });

  test('microphone.record: 2 s of WAV from the stand-in decodes to 2 s and is not silence', async () => {
    const call_id = newCallId();
    const call = s.client.call('microphone.record', { duration_s: 2, format: 'wav' }, { call_id, wait: true, confirm_timeout_ms: 60_000, requester: REQUESTER });
    const p = await s.prompt(call_id);
    assert.match(String(p.sentence), /Record 2 seconds of audio from Test microphone/);
    await s.answer(p, 'allow_once');
    const o = (await call).record.outcome!;
    assert.equal(o.state, 'completed', JSON.stringify(o.error));
    const res = o.output as { audio: BlobRef; duration_ms: number; media_type: string };
    assert.equal(res.media_type, 'audio/wav');
    const file = join(out, 'a.wav');
    await s.download(res.audio, file);
    const d = await decodedDurationS(file);
    assert.ok(Math.abs(d - 2) < 0.15, `decoded ${d} s`);
    assert.ok((await meanVolumeDb(file)) > -40, 'not silence');
  });

  test('a camera that is not shared, or not there, is refused before any prompt and nothing is opened', async () => {
    const before = await s.mediaStatus();
    const prompts = async () => ((await s.control('control.prompts.list')) as { prompts: unknown[] }).prompts.length;
    const ungranted = (await s.client.call('camera.capture_photo', { camera: 'lavfi-other' }, { confirm_timeout_ms: 60_000 })).record.outcome!;
    assert.deepEqual([ungranted.state, ungranted.error?.type], ['rejected', 'permission_denied']);
    assert.match(ungranted.error?.message ?? '', /grants\.cameras/);
    assert.equal(ungranted.confirmation?.required ?? false, false, 'nobody was asked');
    // Microphones are granted with "*": one that is not connected is device_unavailable, decided before consent too.
    const absent = (await s.client.call('microphone.record', { microphone: 'pulse:nothing', duration_s: 1 }, { confirm_timeout_ms: 60_000 })).record.outcome!;
    assert.deepEqual([absent.state, absent.error?.type, absent.error?.details?.['reason']], ['failed', 'device_unavailable', 'no_device']);
    assert.equal(absent.confirmation?.required ?? false, false, 'nobody was asked');
    assert.equal(await prompts(), 0);
    assert.equal((await s.mediaStatus()).opened, before.opened);
  });
});

