/**
 * The media functions: thin glue from the handler SDK to the media service and its backends. This is
 * the only file of the handler that touches the SDK (besides index.ts).
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { BlobRefSchema, defineFunction, WireError, type CallContext, type CallResource, type DescriptorInput, type FunctionDefinition, type GrantsView, type HandlerEnv } from '../../src/sdk/index.js';
import { CaptureError, type CaptureOp, type CaptureProgress, type DeviceKind } from './backends/types.js';
import { GRANT_KIND, type MediaGrant, type MediaService, type ResolvedDevice } from './media-service.js';
import { render, type Message } from './messages.js';

/** Longest clip and recording, in seconds (issue 17). */
export const MAX_CLIP_S = 60;
export const MAX_AUDIO_S = 300;

const DeviceName = (what: string) => Type.String({ minLength: 1, maxLength: 256, description: `The ${what}'s id, label or alias (from the list function); default: the first shared one.` });

const DeviceOut = Type.Object(
  {
    id: Type.String(),
    label: Type.String(),
    alias: Type.Optional(Type.String()),
    granted: Type.Boolean(),
    backend: Type.String(),
    resolutions: Type.Optional(Type.Array(Type.String())),
    width: Type.Optional(Type.Integer()),
    height: Type.Optional(Type.Integer()),
  },
  { additionalProperties: false },
);

/** Fields every capture output has besides its blob. */
const mediaFields = {
  media_type: Type.String(),
  size: Type.Integer({ minimum: 0 }),
  sha256: Type.String(),
  device: Type.Object({ id: Type.String(), label: Type.String() }, { additionalProperties: false }),
};

const PhotoIn = Type.Object(
  {
    camera: Type.Optional(DeviceName('camera')),
    format: Type.Optional(Type.Union([Type.Literal('jpeg'), Type.Literal('png')], { default: 'jpeg' })),
    width: Type.Optional(Type.Integer({ minimum: 16, maximum: 7680 })),
    height: Type.Optional(Type.Integer({ minimum: 16, maximum: 4320 })),
    quality: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'JPEG quality (default 90).' })),
  },
  { additionalProperties: false },
);
const PhotoOut = Type.Object({ photo: BlobRefSchema, width: Type.Integer(), height: Type.Integer(), ...mediaFields }, { additionalProperties: false });

const ClipIn = Type.Object(
  {
    camera: Type.Optional(DeviceName('camera')),
    duration_s: Type.Number({ exclusiveMinimum: 0, maximum: MAX_CLIP_S }),
    format: Type.Optional(Type.Union([Type.Literal('webm'), Type.Literal('mp4')], { default: 'webm' })),
    width: Type.Optional(Type.Integer({ minimum: 16, maximum: 3840 })),
    height: Type.Optional(Type.Integer({ minimum: 16, maximum: 2160 })),
  },
  { additionalProperties: false },
);
const ClipOut = Type.Object({ clip: BlobRefSchema, duration_ms: Type.Integer(), width: Type.Optional(Type.Integer()), height: Type.Optional(Type.Integer()), ...mediaFields }, { additionalProperties: false });

const AudioIn = Type.Object(
  {
    microphone: Type.Optional(DeviceName('microphone')),
    duration_s: Type.Number({ exclusiveMinimum: 0, maximum: MAX_AUDIO_S }),
    format: Type.Optional(Type.Union([Type.Literal('wav'), Type.Literal('opus'), Type.Literal('webm')], { default: 'wav' })),
  },
  { additionalProperties: false },
);
const AudioOut = Type.Object({ audio: BlobRefSchema, duration_ms: Type.Integer(), ...mediaFields }, { additionalProperties: false });

const ScreenIn = Type.Object(
  {
    screen: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'The screen\'s id, label or alias (from screen.list); default: the first shared one, which on Linux and Windows is the whole desktop.' })),
    format: Type.Optional(Type.Union([Type.Literal('png'), Type.Literal('jpeg')], { default: 'png' })),
    scale: Type.Optional(Type.Number({ minimum: 0.1, maximum: 1 })),
    quality: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  },
  { additionalProperties: false },
);
const ScreenOut = Type.Object({ image: BlobRefSchema, width: Type.Integer(), height: Type.Integer(), ...mediaFields }, { additionalProperties: false });

type Json = Record<string, unknown>;
const schema = (s: TSchema): Json => JSON.parse(JSON.stringify(s)) as Json;

/** The grants of one kind as they are now (`*`, an id or a label, with the alias when given). */
export function grantsOf(grants: GrantsView, kind: DeviceKind): MediaGrant[] {
  return grants.list(GRANT_KIND[kind]).map((g) => ({ id: g.id, ...(g.alias ? { alias: g.alias } : {}) }));
}

/** A backend's typed failure as the wire error; anything else passes through (abort reasons, WireErrors). */
export function toWire(e: unknown): unknown {
  if (e instanceof CaptureError) return new WireError(e.type, e.message, { details: e.reason ? { reason: e.reason } : {}, retryable: e.type === 'device_busy' || e.type === 'device_unavailable' || e.type === 'paused', sideEffects: 'none' });
  return e;
}

async function wired<T>(p: () => Promise<T>): Promise<T> {
  try {
    return await p();
  } catch (e) {
    throw toWire(e);
  }
}

function base(id: string, name: string, description: string, level: 'low' | 'high', input: TSchema, output: TSchema, timeouts: [number, number], examples: string[]): DescriptorInput {
  const capture = level === 'high';
  return {
    id,
    name,
    description,
    version: '1.0.0',
    capability_type: 'media',
    access: 'restricted',
    permission_level: level,
    risk: { read_only: !capture, destructive: false, idempotent: !capture, physical: false },
    confirmation: capture ? 'always' : 'policy',
    examples,
    input_schema: schema(input),
    output_schema: schema(output),
    timeout_ms_default: timeouts[0],
    timeout_ms_max: timeouts[1],
    cancellable: true,
    locks: [],
  };
}

function listFunction(env: HandlerEnv, svc: MediaService, kind: DeviceKind, id: string, name: string, description: string) {
  const key = GRANT_KIND[kind];
  const Out = Type.Object({ [key]: Type.Array(DeviceOut) }, { additionalProperties: false });
  return defineFunction<Json, Json>({
    descriptor: base(id, name, description, 'low', Type.Object({}, { additionalProperties: false }), Out, [15_000, 30_000], []),
    async run(_args, ctx) {
      const devices = await wired(() => svc.list(kind, ctx.signal));
      const grants = grantsOf(env.grants, kind);
      return {
        [key]: devices.map((d) => {
          const g = grants.find((x) => x.id === '*' || x.id === d.id || x.id.toLowerCase() === d.label.toLowerCase());
          return { id: d.id, label: d.label, ...(g?.alias ? { alias: g.alias } : {}), granted: g !== undefined, backend: svc.backendFor(d).name, ...(d.resolutions ? { resolutions: d.resolutions } : {}), ...(d.width ? { width: d.width, height: d.height } : {}) };
        }),
      };
    },
  });
}

const requesterOf = (ctx: CallContext): string => ctx.requester?.name ?? ctx.requester?.id ?? render({ key: 'media.requester.unknown', params: {} });

/** What every capture function shares: device resolution, lock, prompt, notice, upload. */
function captureFunction<I extends Json, O>(
  env: HandlerEnv,
  svc: MediaService,
  kind: DeviceKind,
  descriptor: DescriptorInput,
  parts: { device: (a: I) => string | undefined; op: (a: I) => CaptureOp; message: (a: I, device: string) => Message; output: (ref: Static<typeof BlobRefSchema>, r: { width?: number; height?: number; durationMs?: number }, d: ResolvedDevice) => O },
): FunctionDefinition<I, O> {
  const resolveNow = (a: I, grants: GrantsView, signal?: AbortSignal) => wired(() => svc.resolve(kind, parts.device(a), grantsOf(grants, kind), signal));
  const label = (r: ResolvedDevice) => r.alias ?? r.device.label;
  return {
    descriptor,
    // Before consent: a device that is not shared or not there ends the call here, and nobody is asked.
    // The resource is the granted id (what the grant check compares); the lock is the device itself.
    async resources(a, { grants }): Promise<CallResource[]> {
      const r = await resolveNow(a, grants);
      const g = grantsOf(grants, kind).find((x) => x.alias === r.alias && (x.id === '*' || x.id === r.device.id || x.id.toLowerCase() === r.device.label.toLowerCase()));
      return [{ kind: GRANT_KIND[kind], id: !g || g.id === '*' ? r.device.id : g.id, label: label(r), ask: 'always', access: 'read', lock: `${kind}:${r.device.id}` }];
    },
    describe: (a, resources) => parts.message(a, resources[0]?.label ?? resources[0]?.id ?? ''),
    async run(args, ctx) {
      const resolved = await resolveNow(args, env.grants, ctx.signal);
      const op = parts.op(args);
      const requester = requesterOf(ctx);
      void env.host?.notice(render({ key: `media.notice.${kind}`, params: { requester } }), render({ key: 'media.notice.body', params: { device: label(resolved) } }));
      const onProgress = (p: CaptureProgress) => {
        const params = { elapsed: Math.floor(p.elapsedMs / 1000), total: Math.round(p.totalMs / 1000), ...(p.level !== undefined ? { level: Math.round(p.level * 100) } : {}) };
        ctx.progress({ progress: p.elapsedMs, total: p.totalMs, message: render({ key: p.level !== undefined ? 'media.progress.level' : 'media.progress.recording', params }) });
      };
      return wired(() =>
        svc.capture({ callId: ctx.callId, functionId: ctx.functionId, requester, signal: ctx.signal, onProgress, tempDir: () => ctx.tempDir() }, resolved, op, async (path, result) => {
          const ref = await ctx.blobs.uploadFile(path, result.mediaType, ctx.signal);
          return parts.output(ref, result, resolved);
        }),
      );
    },
  };
}

const common = (ref: Static<typeof BlobRefSchema>, d: ResolvedDevice) => ({ media_type: ref.media_type, size: ref.size, sha256: ref.sha256, device: { id: d.device.id, label: d.alias ?? d.device.label } });

type PhotoArgs = Static<typeof PhotoIn>;
type ClipArgs = Static<typeof ClipIn>;
type AudioArgs = Static<typeof AudioIn>;
type ScreenArgs = Static<typeof ScreenIn>;

/** Every media function, for one handler instance. */
export function mediaFunctions(env: HandlerEnv, svc: MediaService): FunctionDefinition<never, unknown>[] {
  // "its own size" as a message, so the prompt says it in the reader's language (not the agent's English).
  const size = (a: { width?: number; height?: number }): string | Message => (a.width || a.height ? `${a.width ?? 'auto'}×${a.height ?? 'auto'}` : { key: 'media.size.native', params: {} });
  const fns = [
    listFunction(env, svc, 'camera', 'camera.list', 'List cameras', 'Lists the cameras this device has, with id, label, the alias the user gave and whether it is shared. Use before camera.capture_photo or camera.record_clip to pick one.'),
    captureFunction<PhotoArgs, Json>(env, svc, 'camera', base('camera.capture_photo', 'Take a photo', 'Takes one still picture with a shared camera; the person at the device confirms every photo. The picture comes back as a blob (JPEG or PNG) with its size and SHA-256.', 'high', PhotoIn, PhotoOut, [30_000, 60_000], ['Take a photo of the shelf']), {
      device: (a) => a.camera,
      op: (a) => ({ op: 'photo', format: a.format ?? 'jpeg', ...(a.width ? { width: a.width } : {}), ...(a.height ? { height: a.height } : {}), ...(a.quality ? { quality: a.quality } : {}) }),
      message: (a, device) => ({ key: 'media.camera.capture_photo', params: { device, size: size(a), format: (a.format ?? 'jpeg').toUpperCase() } }),
      output: (ref, r, d) => ({ photo: ref, width: r.width ?? 0, height: r.height ?? 0, ...common(ref, d) }),
    }),
    captureFunction<ClipArgs, Json>(env, svc, 'camera', base('camera.record_clip', 'Record a video clip', `Records a short video (at most ${MAX_CLIP_S} s, WebM or MP4, no sound) with a shared camera; the person at the device confirms every clip. Reports progress each second; the clip comes back as a blob.`, 'high', ClipIn, ClipOut, [(MAX_CLIP_S + 30) * 1000, (MAX_CLIP_S + 60) * 1000], ['Record ten seconds of the loading dock']), {
      device: (a) => a.camera,
      op: (a) => ({ op: 'clip', format: a.format ?? 'webm', durationMs: Math.round(a.duration_s * 1000), ...(a.width ? { width: a.width } : {}), ...(a.height ? { height: a.height } : {}) }),
      message: (a, device) => ({ key: 'media.camera.record_clip', params: { device, seconds: a.duration_s } }),
      output: (ref, r, d) => ({ clip: ref, duration_ms: r.durationMs ?? 0, ...(r.width ? { width: r.width } : {}), ...(r.height ? { height: r.height } : {}), ...common(ref, d) }),
    }),
    listFunction(env, svc, 'microphone', 'microphone.list', 'List microphones', 'Lists the microphones (audio inputs) this device has, with id, label, alias and whether each is shared. Use before microphone.record.'),
    captureFunction<AudioArgs, Json>(env, svc, 'microphone', base('microphone.record', 'Record audio', `Records audio (at most ${MAX_AUDIO_S / 60} minutes; WAV, Opus or WebM) from a shared microphone; the person at the device confirms every recording. Reports progress and the input level; the recording comes back as a blob.`, 'high', AudioIn, AudioOut, [(MAX_AUDIO_S + 30) * 1000, (MAX_AUDIO_S + 60) * 1000], ['Record ten seconds from the microphone']), {
      device: (a) => a.microphone,
      op: (a) => ({ op: 'audio', format: a.format ?? 'wav', durationMs: Math.round(a.duration_s * 1000) }),
      message: (a, device) => ({ key: 'media.microphone.record', params: { device, seconds: a.duration_s } }),
      output: (ref, r, d) => ({ audio: ref, duration_ms: r.durationMs ?? 0, ...common(ref, d) }),
    }),
    listFunction(env, svc, 'screen', 'screen.list', 'List screens', 'Lists the displays this device can capture, with id, label, alias and whether each is shared. Use before screen.capture.'),
    captureFunction<ScreenArgs, Json>(env, svc, 'screen', base('screen.capture', 'Take a screenshot', 'Captures a still picture of a shared display (PNG or JPEG, optionally scaled down); the person at the device confirms every screenshot. The picture comes back as a blob.', 'high', ScreenIn, ScreenOut, [30_000, 60_000], ['Capture the screen so I can see the error']), {
      device: (a) => a.screen,
      op: (a) => ({ op: 'screenshot', format: a.format ?? 'png', ...(a.scale ? { scale: a.scale } : {}), ...(a.quality ? { quality: a.quality } : {}) }),
      message: (_a, device) => ({ key: 'media.screen.capture', params: { device } }),
      output: (ref, r, d) => ({ image: ref, width: r.width ?? 0, height: r.height ?? 0, ...common(ref, d) }),
    }),
  ];
  return fns as unknown as FunctionDefinition<never, unknown>[];
}

/** Turns the provider hub's methods into local-endpoint methods whose failures are wire errors. */
export function wireMethods<M extends Record<string, (p: unknown, c: never) => Promise<unknown>>>(methods: M): M {
  const out: Record<string, (p: unknown, c: never) => Promise<unknown>> = {};
  for (const [name, fn] of Object.entries(methods)) out[name] = (p, c) => wired(() => fn(p, c));
  return out as M;
}
