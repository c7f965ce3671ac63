/**
 * Issue 27, finding 1 for media: a device id handed to ffmpeg's `-i` is a capture device of the platform,
 * never a regular file or a URL. The grant kinds refuse such ids before consent (through the kit's test
 * host: no prompt, no ffmpeg), and the ffmpeg backend refuses them again before it starts ffmpeg (an
 * ffmpeg stand-in that leaves a mark when run shows it never ran).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestHost } from '../../../src/kit/testing.js';
import handler from '../index.js';
import { checkCaptureId } from '../backends/device-check.js';
import { FfmpegBackend } from '../backends/ffmpeg-backend.js';
import { CaptureError } from '../backends/types.js';

/** A folder with a regular file, a `video0` link to it and an ffmpeg stand-in that marks that it ran. */
function scene() {
  const dir = mkdtempSync(join(tmpdir(), 'aios-media-ids-'));
  const file = join(dir, 'clip.mp4');
  writeFileSync(file, 'not a camera');
  const link = join(dir, 'video0');
  symlinkSync(file, link);
  const mark = join(dir, 'ffmpeg-ran');
  const ffmpeg = join(dir, 'ffmpeg');
  writeFileSync(ffmpeg, `#!/bin/sh\ntouch '${mark}'\nexit 1\n`);
  chmodSync(ffmpeg, 0o755);
  return { dir, file, link, mark, ffmpeg };
}

test('ids that are files, links to files, other character devices or URLs are not capture devices; names pass', async () => {
  const s = scene();
  try {
    for (const [kind, id] of [['camera', s.file], ['camera', s.link], ['camera', '/dev/null'], ['camera', 'http://example.invalid/cam.mjpg'], ['camera', 'file:///etc/passwd'], ['microphone', s.file], ['microphone', 'alsa:/etc/passwd'], ['screen', 'rtsp://example.invalid/s']] as const) {
      assert.equal((await checkCaptureId(kind, id, 'linux'))?.rule, 'not_a_capture_device', `${kind} ${id}`);
    }
    for (const [kind, id] of [['camera', 'lavfi-camera'], ['camera', 'page:camera-1'], ['camera', '/dev/video99'], ['microphone', 'pulse:default'], ['microphone', 'alsa:hw:1,0'], ['screen', ':0'], ['camera', 'avf:0']] as const) {
      assert.equal(await checkCaptureId(kind, id, 'linux'), undefined, `${kind} ${id}`);
    }
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('under cameras: ["*"], a camera whose id is a regular file is refused before consent and ffmpeg never runs', async () => {
  const s = scene();
  // The id is the file (through a link); the input is what ffmpeg would open.
  const host = await createTestHost(handler, { grants: { cameras: ['*'] }, options: { backend: 'ffmpeg', probe: false, ffmpeg: s.ffmpeg, devices: [{ kind: 'camera', id: s.link, label: 'Cam', format: 'v4l2', input: s.link }] } });
  try {
    const o = await host.call('camera.capture_photo', { camera: s.link });
    assert.deepEqual([o.state, o.error?.type, o.error?.details?.['rule']], ['rejected', 'permission_denied', 'not_a_capture_device'], JSON.stringify(o.error));
    assert.deepEqual(host.prompts, [], 'nobody was asked');
    assert.equal(existsSync(s.mark), false, 'ffmpeg never ran');
  } finally {
    await host.close();
    rmSync(s.dir, { recursive: true, force: true });
  }
});

test('the ffmpeg backend refuses a probed camera id that is a regular file before starting ffmpeg', async () => {
  const s = scene();
  try {
    const b = new FfmpegBackend({ ffmpeg: s.ffmpeg, platform: 'linux', probe: false });
    const e = await b.capture({ op: 'photo', format: 'jpeg', device: { kind: 'camera', id: s.link, label: 'Cam' }, outPath: join(s.dir, 'x.jpg') }, new AbortController().signal).then(() => undefined, (x: unknown) => x);
    assert.ok(e instanceof CaptureError, String(e));
    assert.deepEqual([e.type, e.reason], ['permission_denied', 'not_a_capture_device']);
    assert.equal(existsSync(s.mark), false, 'ffmpeg never ran');
    assert.equal(b.openCount, 0);
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
});
