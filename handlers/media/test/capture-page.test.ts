/**
 * The capture page (electron/renderer/capture.html) in Debian's Chromium as the capture provider of a
 * CLI-started agent, called through a CLI-started bridge. Chromium's fake capture devices stand in for
 * the camera (fed a QR code we generate, as a y4m file) and the microphone (its built-in beep); the user
 * answers prompts in the tray page (/ui/) in the same browser.
 */
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import QRCode from 'qrcode';
import { PNG } from 'pngjs';
import jsQRModule from 'jsqr';
import type { BlobRef } from '../../../src/sdk/index.js';
import { newCallId } from '../../../src/protocol/call-id.js';
import { until } from '../../../test/helpers/stack.js';
import { decodedDurationS, meanVolumeDb, probe } from './peers.js';
import { mediaStack } from './stack.js';

const run = promisify(execFile);
// jsqr is CommonJS whose typings declare an ES default: at run time the function is the module itself.
const jsQR = ((jsQRModule as unknown as { default?: unknown }).default ?? jsQRModule) as unknown as (d: Uint8ClampedArray, w: number, h: number) => { data: string } | null;
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const QR_TEXT = 'AIOS shelf 42: 7 boxes of screws';
const REQUESTER = { kind: 'agent', id: 'agt_shelf', name: 'Shelf assistant' };

/** A y4m video of a QR code (what Chromium's fake camera will show). */
async function qrVideo(dir: string): Promise<string> {
  const png = join(dir, 'qr.png');
  await QRCode.toFile(png, QR_TEXT, { width: 360, margin: 4 });
  const y4m = join(dir, 'qr.y4m');
  await run('ffmpeg', ['-v', 'error', '-y', '-loop', '1', '-i', png, '-vf', 'scale=360:360:flags=neighbor,pad=640:480:140:60:white,format=yuv420p', '-r', '10', '-frames:v', '10', y4m]);
  return y4m;
}

describe('the capture page in Chromium as capture provider of a CLI-started agent', () => {
  let s: Awaited<ReturnType<typeof mediaStack>>;
  let context: BrowserContext;
  let capturePage: Page;
  let ui: Page;
  let dir: string;
  const problems: string[] = [];
  let camLabel = '';
  const pageStats = () => capturePage.evaluate('window.aiosCapture') as Promise<{ open: number; opened: number; attached: boolean }>;
  // Captures are written into the call's private temp folder (ctx.tempDir, under <data_dir>/tmp/calls).
  const mediaTemps = () => s.tempFiles();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'aios-capture-page-'));
    const y4m = await qrVideo(dir);
    s = await mediaStack({ grants: { cameras: ['*'], microphones: ['*'], screens: ['*'] }, handlers: { media: { backend: 'provider' } } });
    context = await chromium.launchPersistentContext(join(dir, 'chromium'), {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: [...CHROMIUM_ARGS, '--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', `--use-file-for-fake-video-capture=${y4m}`, '--autoplay-policy=no-user-gesture-required'],
    });
    capturePage = context.pages()[0] ?? (await context.newPage());
    for (const p of [capturePage]) {
      p.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      p.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    }
    await capturePage.goto(`${s.local.http}/ui/capture.html#token=${encodeURIComponent(s.local.token)}`);
    await capturePage.locator('#provider-state[data-state="attached"]').waitFor();
    ui = await context.newPage();
    await ui.goto(`${s.local.http}/ui/#token=${encodeURIComponent(s.local.token)}`);
    await ui.locator('#agent-state[data-state="connected"]').waitFor();
  });
  after(async () => {
    await context?.close().catch(() => undefined);
    await s?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Starts a call and answers its prompt in the tray page; returns the call and the prompt's sentence. */
  async function callAnswered(fn: string, args: Record<string, unknown>, answer: 'Allow once' | 'Deny', wait = true) {
    const call_id = newCallId();
    const call = s.client.call(fn, args, { call_id, wait, confirm_timeout_ms: 60_000, requester: REQUESTER });
    const prompt = ui.getByRole('alertdialog');
    await prompt.waitFor();
    const sentence = (await ui.locator('#prompt-sentence').textContent()) ?? '';
    // Captures always ask: remembering is never offered.
    assert.equal(await prompt.getByRole('button', { name: 'Allow & remember', exact: true }).isVisible(), false);
    await prompt.getByRole('button', { name: answer, exact: true }).click();
    await prompt.waitFor({ state: 'hidden' });
    return { call_id, call, sentence };
  }

  test('the agent status shows the attached page, and camera.list offers its camera', async () => {
    assert.deepEqual((await s.mediaStatus()).providers.map((p) => p.name), ['capture page']);
    const r = await s.client.call('camera.list', {});
    const cams = (r.record.outcome?.output as { cameras: { id: string; backend: string; granted: boolean }[] }).cameras;
    const cam = cams.find((c) => c.id === 'page:camera-1' && c.backend === 'provider' && c.granted);
    assert.ok(cam, JSON.stringify(cams));
    camLabel = (cam as unknown as { label: string }).label;
    assert.deepEqual(await pageStats(), { open: 0, opened: 0, attached: true }, 'listing opened nothing');
  });

  test('capture_photo: the prompt in the tray page names the camera; the PNG blob decodes to the QR code\'s text', async () => {
    const { call, sentence } = await callAnswered('camera.capture_photo', { format: 'png' }, 'Allow once');
    assert.equal(sentence, `Take a photo with ${camLabel} (its own size, PNG)`);
    const o = (await call).record.outcome!;
    assert.equal(o.state, 'completed', JSON.stringify(o.error));
    const res = o.output as { photo: BlobRef; width: number; height: number; media_type: string };
    assert.deepEqual([res.width, res.height, res.media_type], [640, 480, 'image/png']);
    const file = join(dir, 'photo.png');
    await s.download(res.photo, file);
    const png = PNG.sync.read(readFileSync(file));
    const qr = jsQR(new Uint8ClampedArray(png.data), png.width, png.height);
    assert.equal(qr?.data, QR_TEXT);
    assert.equal((await pageStats()).open, 0, 'the camera is closed again');
    assert.deepEqual(mediaTemps(), []);
  });

  test('Deny ends rejected/user_rejected and the page never opens a device', async () => {
    const before = await pageStats();
    const statusBefore = await s.mediaStatus();
    const { call } = await callAnswered('camera.capture_photo', {}, 'Deny');
    const o = (await call).record.outcome!;
    assert.equal(o.state, 'rejected');
    assert.equal(o.error?.type, 'user_rejected');
    assert.deepEqual(await pageStats(), before);
    assert.equal((await s.mediaStatus()).opened, statusBefore.opened);
  });

  test('microphone.record: 2 s of WAV from the fake microphone lasts 2 s and is not silence', async () => {
    const { call, sentence } = await callAnswered('microphone.record', { duration_s: 2, format: 'wav' }, 'Allow once');
    assert.match(sentence, /^Record 2 seconds of audio from Fake Default Audio Input$/, 'the prompt names the microphone');
    const o = (await call).record.outcome!;
    assert.equal(o.state, 'completed', JSON.stringify(o.error));
    const res = o.output as { audio: BlobRef; media_type: string };
    assert.equal(res.media_type, 'audio/wav');
    const file = join(dir, 'a.wav');
    await s.download(res.audio, file);
    const d = await decodedDurationS(file);
    assert.ok(Math.abs(d - 2) < 0.2, `decoded ${d} s`);
    assert.ok((await meanVolumeDb(file)) > -60, 'the fake microphone\'s beep is there');
  });

  test('a WebM clip from the page decodes as VP8', async () => {
    const { call } = await callAnswered('camera.record_clip', { duration_s: 2 }, 'Allow once');
    const o = (await call).record.outcome!;
    assert.equal(o.state, 'completed', JSON.stringify(o.error));
    const res = o.output as { clip: BlobRef; media_type: string; duration_ms: number };
    assert.equal(res.media_type, 'video/webm');
    const file = join(dir, 'c.webm');
    await s.download(res.clip, file);
    assert.equal((await probe(file)).codec, 'vp8');
    assert.ok(res.duration_ms >= 1900, `${res.duration_ms} ms`);
  });

  test('a cancelled clip stops the camera at once and leaves nothing behind', async () => {
    const { call_id } = await callAnswered('camera.record_clip', { duration_s: 30 }, 'Allow once', false);
    await until(async () => (await pageStats()).open === 1, 20_000, 'the page to open the camera');
    await until(async () => (await s.mediaStatus()).capturing.length === 1, 10_000, 'the status to show the capture');
    await s.client.cancel(call_id);
    const r = await s.client.waitTerminal(call_id, 20_000);
    assert.equal(r.outcome?.state, 'cancelled');
    assert.equal((await pageStats()).open, 0, 'the page stopped its tracks');
    const m = await s.mediaStatus();
    assert.deepEqual([m.open, m.capturing.length], [0, 0]);
    assert.deepEqual(mediaTemps(), [], 'no partial clip is left');
    assert.deepEqual(problems, []);
  });
});
