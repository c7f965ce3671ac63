/**
 * The media handler in the kit's test host (real dispatcher, real consent order, in-memory blobs): grant
 * kinds with aliases, resources resolved before the prompt, prompt sentences in en and zh-CN, the pause
 * hook. lavfi stands in for the camera (no capture device on these machines).
 */
import { test } from 'node:test';
import { until } from '../../../test/helpers/wait.js';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createTestHost } from '../../../src/kit/testing.js';
import handler from '../index.js';
import { dimsOf } from '../backends/image-dims.js';
import type { BlobRef } from '../../../src/sdk/index.js';
import { PNG } from 'pngjs';
import { LAVFI_CAMERA, LAVFI_MIC, paintedDisplay } from './peers.js';

const options = { backend: 'ffmpeg', probe: false, devices: [LAVFI_CAMERA, LAVFI_MIC] };

test('an alias names the camera in the call and in the prompt; the blob is a 640×480 JPEG', async () => {
  const host = await createTestHost(handler, { grants: { cameras: [{ id: 'lavfi-camera', alias: 'shelf' }] }, options });
  try {
    const o = await host.call('camera.capture_photo', { camera: 'shelf' });
    assert.equal(o.state, 'completed', JSON.stringify(o.error));
    assert.deepEqual(host.prompts.map((p) => p.sentence), ['Take a photo with shelf (its own size, JPEG)']);
    assert.deepEqual(host.prompts[0]!.resources, [{ kind: 'cameras', id: 'lavfi-camera', label: 'shelf' }]);
    const out = o.output as { photo: BlobRef; device: { label: string } };
    assert.equal(out.device.label, 'shelf');
    assert.deepEqual(dimsOf(host.blobs.get(out.photo)), { width: 640, height: 480 });
    const list = await host.call('camera.list', {});
    assert.deepEqual((list.output as { cameras: { id: string; alias?: string; granted: boolean }[] }).cameras.map((c) => [c.id, c.alias, c.granted]), [['lavfi-camera', 'shelf', true]]);
  } finally {
    await host.close();
  }
});

test('the prompt in zh-CN', async () => {
  const host = await createTestHost(handler, { grants: { microphones: ['*'] }, options, locale: 'zh-CN', answer: 'deny' });
  try {
    const o = await host.call('microphone.record', { duration_s: 3 });
    assert.deepEqual([o.state, o.error?.type], ['rejected', 'user_rejected']);
    assert.deepEqual(host.prompts.map((p) => p.sentence), ['从Test microphone (lavfi sine 440 Hz)录制 3 秒音频']);
  } finally {
    await host.close();
  }
});

test('a screen or camera name no grant covers → rejected/permission_denied, and nobody is asked', async () => {
  const host = await createTestHost(handler, { grants: { cameras: ['lavfi-camera'], screens: [] }, options });
  try {
    const notShared = await host.call('screen.capture', {});
    assert.deepEqual([notShared.state, notShared.error?.type], ['rejected', 'permission_denied']);
    assert.match(notShared.error?.message ?? '', /grants\.screens/);
    const absent = await host.call('camera.capture_photo', { camera: 'no-such-camera' });
    assert.equal(absent.error?.type, 'permission_denied', 'a name no grant covers is not shared, whether or not it exists');
    assert.deepEqual(host.prompts, []);
  } finally {
    await host.close();
  }
});

test('a grant entry of the wrong shape is refused when the grants are loaded', async () => {
  await assert.rejects(createTestHost(handler, { grants: { cameras: [{ path: '/dev/video0' }] }, options }), /bad grants/);
});

test('pausing the agent stops a recording at once: failed/paused, and no partial clip is kept', async () => {
  const host = await createTestHost(handler, { grants: { cameras: ['*'] }, options });
  try {
    const { outcome } = host.start('camera.record_clip', { duration_s: 30 });
    await until(() => host.progress.length, 20_000, 'the recording to report progress');
    await host.pause();
    const o = await outcome;
    assert.deepEqual([o.state, o.error?.type], ['failed', 'paused']);
    const calls = join(host.dataDir, 'tmp', 'calls');
    const left = existsSync(calls) ? readdirSync(calls, { recursive: true }).map(String).filter((p) => !statSync(join(calls, p)).isDirectory()) : [];
    assert.deepEqual(left, []);
  } finally {
    await host.close();
  }
});

test('screen.capture of a real X display (Xvfb, a window painted a known colour): the PNG blob has the display size and the colour', async () => {
  const x = await paintedDisplay('3366cc');
  const saved = process.env['DISPLAY'];
  process.env['DISPLAY'] = x.display;
  try {
    const host = await createTestHost(handler, { grants: { screens: ['*'] }, options: { backend: 'ffmpeg' } });
    try {
      const o = await host.call('screen.capture', {});
      assert.equal(o.state, 'completed', JSON.stringify(o.error));
      assert.deepEqual(host.prompts.map((p) => p.sentence), [`Take a screenshot of X display ${x.display}`]);
      const out = o.output as { image: BlobRef; width: number; height: number };
      assert.deepEqual([out.width, out.height], [1111, 777]);
      const png = PNG.sync.read(host.blobs.get(out.image));
      const at = (px: number, py: number) => [...png.data.subarray((py * png.width + px) * 4, (py * png.width + px) * 4 + 3)];
      const near = (a: number[], b: number[]) => a.every((v, i) => Math.abs(v - b[i]!) <= 8);
      assert.ok(near(at(x.window.x + 30, x.window.y + 30), [0x33, 0x66, 0xcc]), `window pixel ${at(x.window.x + 30, x.window.y + 30).join(',')}`);
      assert.ok(near(at(10, 10), [255, 255, 255]));
    } finally {
      await host.close();
    }
  } finally {
    if (saved === undefined) delete process.env['DISPLAY'];
    else process.env['DISPLAY'] = saved;
    await x.stop();
  }
});

test('ffmpeg missing → failed/device_unavailable (ffmpeg_missing) saying how to install it, with no side effects', async () => {
  const host = await createTestHost(handler, { grants: { cameras: ['*'] }, options: { ...options, ffmpeg: '/nonexistent/bin/ffmpeg' } });
  try {
    const o = await host.call('camera.capture_photo', {});
    assert.deepEqual([o.state, o.error?.type, o.error?.details?.['reason']], ['failed', 'device_unavailable', 'ffmpeg_missing']);
    assert.match(o.error?.message ?? '', /apt install ffmpeg|brew install ffmpeg|winget/);
    assert.equal(o.error?.side_effects, 'none');
  } finally {
    await host.close();
  }
});
