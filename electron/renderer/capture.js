// The capture page: a capture provider for the agent (handlers/media/backends/provider-hub.ts describes
// the protocol). It attaches over `WS /rpc` on its own origin with the local token (from #token=…, as the
// tray page does), lists devices without opening them, and opens a device only when the agent sends a
// capture request (which the user has confirmed in the agent's prompt). Captured bytes go to the agent
// only, as base64 chunks; nothing is stored here. In the tray it runs in a hidden, sandboxed window.
/* global btoa, MediaRecorder, Blob, AudioContext */
'use strict';
(async () => {
  const TOKEN_KEY = 'aios-capture-token';
  const CHUNK = 384 * 1024;
  const $ = (id) => document.getElementById(id);
  // Open devices, for the page's state line and for tests (window.aiosCapture).
  const stats = { open: 0, opened: 0, attached: false };
  window.aiosCapture = stats;
  const active = new Map(); // request_id -> { stop(), stopped }

  function takeToken() {
    const frag = new URLSearchParams(location.hash.slice(1));
    const t = frag.get('token');
    if (t) {
      sessionStorage.setItem(TOKEN_KEY, t);
      history.replaceState(null, '', location.pathname + location.search);
      return t;
    }
    return sessionStorage.getItem(TOKEN_KEY);
  }

  // ------------------------------------------------------------------ strings (en.json, zh-CN.json: ui.capture.*)
  const { pickLocale, t } = window.aiosCatalogue;
  async function loadLocale(locale) {
    await window.aiosCatalogue.loadLocale(locale);
    document.documentElement.lang = locale === 'zh-CN' ? 'zh-CN' : 'en';
    for (const el of document.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  }

  function setState(id, key, state) {
    const el = $(id);
    el.textContent = t(key);
    el.dataset.state = state;
  }

  // ------------------------------------------------------------------ JSON-RPC over WS /rpc
  let ws;
  let nextId = 1;
  const pending = new Map();
  function call(method, params) {
    return new Promise((resolve, reject) => {
      if (!ws || ws.readyState !== WebSocket.OPEN) return reject(new Error('not connected'));
      const id = nextId++;
      pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  // ------------------------------------------------------------------ devices
  const KIND = { videoinput: 'camera', audioinput: 'microphone' };
  /** Devices with ids stable across permission grants: `camera-1`, `microphone-1`, and one `screen`. */
  async function listDevices() {
    const all = navigator.mediaDevices ? await navigator.mediaDevices.enumerateDevices() : [];
    const out = [];
    const count = { camera: 0, microphone: 0 };
    for (const d of all) {
      const kind = KIND[d.kind];
      if (!kind) continue;
      count[kind]++;
      out.push({ kind, id: `${kind}-${count[kind]}`, label: d.label || t(`ui.capture.device.${kind}`, { n: count[kind] }), deviceId: d.deviceId });
    }
    if (navigator.mediaDevices && navigator.mediaDevices.getDisplayMedia) out.push({ kind: 'screen', id: 'screen', label: t('ui.capture.device.screen') });
    return out;
  }
  const wire = (list) => list.map(({ kind, id, label }) => ({ kind, id, label }));

  async function constraintFor(kind, id) {
    const d = (await listDevices()).find((x) => x.kind === kind && x.id === id);
    if (!d) throw Object.assign(new Error('no such device'), { name: 'NotFoundError' });
    return d.deviceId && d.deviceId !== 'default' ? { deviceId: { exact: d.deviceId } } : {};
  }

  // ------------------------------------------------------------------ capture helpers
  function opened(rid, stream) {
    stats.open++;
    stats.opened++;
    setState('capture-state', 'ui.capture.state.capturing', 'capturing');
    void call('media.provider.event', { request_id: rid, event: 'opened' }).catch(() => undefined);
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      for (const t of stream.getTracks()) t.stop();
      stats.open--;
      if (!stats.open) setState('capture-state', 'ui.capture.state.idle', 'idle');
      void call('media.provider.event', { request_id: rid, event: 'closed' }).catch(() => undefined);
    };
  }

  function toBase64(bytes) {
    let s = '';
    for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(s);
  }

  async function send(rid, blob, meta, job) {
    const bytes = new Uint8Array(await blob.arrayBuffer());
    for (let seq = 0, off = 0; off < bytes.length; seq++, off += CHUNK) {
      if (job.stopped) return;
      await call('media.provider.chunk', { request_id: rid, seq, data: toBase64(bytes.subarray(off, off + CHUNK)) });
    }
    if (!job.stopped) await call('media.provider.done', { request_id: rid, ...meta });
  }

  async function frameOf(stream, width, height) {
    const video = document.createElement('video');
    video.muted = true;
    video.playsInline = true;
    video.srcObject = stream;
    await video.play();
    // Wait for a decoded frame with a size (the first callbacks can come before the camera delivers one).
    while (!video.videoWidth) await new Promise((r) => requestAnimationFrame(r));
    await new Promise((r) => (video.requestVideoFrameCallback ? video.requestVideoFrameCallback(() => r()) : setTimeout(r, 100)));
    const w = width || (height ? Math.round((video.videoWidth * height) / video.videoHeight) : video.videoWidth);
    const h = height || (width ? Math.round((video.videoHeight * width) / video.videoWidth) : video.videoHeight);
    const canvas = document.createElement('canvas');
    canvas.width = w;
    canvas.height = h;
    canvas.getContext('2d').drawImage(video, 0, 0, w, h);
    video.srcObject = null;
    return canvas;
  }

  const toBlob = (canvas, type, quality) => new Promise((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('encode failed'))), type, quality));

  function sleepOrStop(ms, job) {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      job.onStop = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  /** Records `stream` with MediaRecorder for `ms`, reporting progress each second (and the level for audio). */
  async function record(rid, stream, mimeType, ms, job, levelOf) {
    if (!MediaRecorder.isTypeSupported(mimeType)) throw Object.assign(new Error('format not supported'), { name: 'NotSupportedError' });
    const rec = new MediaRecorder(stream, { mimeType });
    const parts = [];
    rec.ondataavailable = (e) => e.data.size && parts.push(e.data);
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
  function levelMeter(stream) {
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
  async function recordWav(rid, stream, ms, job, meter) {
    const ctx = new AudioContext();
    const src = ctx.createMediaStreamSource(stream);
    const proc = ctx.createScriptProcessor(4096, 1, 1);
    const chunks = [];
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
    const w = (o, s) => [...s].forEach((c, i) => pcm.setUint8(o + i, c.charCodeAt(0)));
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

  const ERROR_WORD = { NotAllowedError: 'not_allowed', SecurityError: 'not_allowed', NotFoundError: 'not_found', OverconstrainedError: 'not_found', NotReadableError: 'busy', AbortError: 'busy' };

  async function capture(req) {
    const rid = req.request_id;
    const job = { stopped: false, onStop: undefined };
    active.set(rid, job);
    let close = () => {};
    try {
      let stream;
      if (req.kind === 'screen') stream = await navigator.mediaDevices.getDisplayMedia({ video: true, audio: false });
      else if (req.kind === 'camera') stream = await navigator.mediaDevices.getUserMedia({ video: { ...(await constraintFor('camera', req.device_id)), ...(req.width ? { width: { ideal: req.width } } : {}), ...(req.height ? { height: { ideal: req.height } } : {}) } });
      else stream = await navigator.mediaDevices.getUserMedia({ audio: await constraintFor('microphone', req.device_id) });
      close = opened(rid, stream);
      if (job.stopped) return;
      if (req.op === 'photo' || req.op === 'screenshot') {
        const canvas = req.op === 'screenshot' && req.scale ? await frameOf(stream, 0, 0).then((c) => scaled(c, req.scale)) : await frameOf(stream, req.width || 0, req.height || 0);
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
      if (!job.stopped) void call('media.provider.fail', { request_id: rid, error: ERROR_WORD[e && e.name] || 'failed' }).catch(() => undefined);
    } finally {
      close();
      active.delete(rid);
    }
  }

  function scaled(canvas, s) {
    const c = document.createElement('canvas');
    c.width = Math.max(1, Math.round(canvas.width * s));
    c.height = Math.max(1, Math.round(canvas.height * s));
    c.getContext('2d').drawImage(canvas, 0, 0, c.width, c.height);
    return c;
  }

  function stop(rid) {
    const job = active.get(rid);
    if (!job) return;
    job.stopped = true;
    if (job.onStop) job.onStop();
  }

  // ------------------------------------------------------------------ connection
  function connect(token) {
    setState('provider-state', 'ui.capture.provider.connecting', 'connecting');
    ws = new WebSocket(location.origin.replace(/^http/, 'ws') + '/rpc', ['aios-local.v1', 'bearer.' + token]);
    ws.onmessage = (m) => {
      let msg;
      try {
        msg = JSON.parse(m.data);
      } catch {
        return;
      }
      if (msg.id !== undefined && pending.has(msg.id)) {
        const p = pending.get(msg.id);
        pending.delete(msg.id);
        if (msg.error) p.reject(new Error(msg.error.message));
        else p.resolve(msg.result);
      } else if (msg.method === 'media/notification.capture') void capture(msg.params);
      else if (msg.method === 'media/notification.stop') stop(msg.params.request_id);
    };
    ws.onopen = async () => {
      try {
        await call('media.provider.attach', { name: 'capture page', devices: wire(await listDevices()) });
        stats.attached = true;
        setState('provider-state', 'ui.capture.provider.attached', 'attached');
      } catch (e) {
        $('error').hidden = false;
        $('error').textContent = t('ui.capture.error.attach', { message: e.message });
      }
    };
    ws.onclose = () => {
      stats.attached = false;
      for (const rid of active.keys()) stop(rid);
      for (const p of pending.values()) p.reject(new Error('disconnected'));
      pending.clear();
      setState('provider-state', 'ui.capture.provider.disconnected', 'disconnected');
      setTimeout(() => connect(token), 1000);
    };
  }

  if (navigator.mediaDevices)
    navigator.mediaDevices.addEventListener('devicechange', async () => {
      if (stats.attached) void call('media.provider.devices', { devices: wire(await listDevices()) }).catch(() => undefined);
    });

  // A page without its catalogue still captures: its built-in English stays and the state lines show keys.
  await loadLocale(pickLocale()).catch(() => undefined);
  const token = takeToken();
  if (!token) {
    $('error').hidden = false;
    $('error').textContent = t('ui.capture.error.no_token');
  } else connect(token);
})();
