/**
 * The built-in `media` handler: camera, microphone and screen capture through two backends behind one
 * interface (ffmpeg as a child process, and a capture page attached over the local endpoint), every
 * capture confirmed by the user. docs/handlers/media.md describes it.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { defineHandler } from '../../src/sdk/index.js';
import { FfmpegBackend } from './backends/ffmpeg-backend.js';
import { ProviderHub } from './backends/provider-hub.js';
import { MediaService } from './media-service.js';
import { mediaFunctions, wireMethods } from './functions.js';
import { cameraGrants, microphoneGrants, screenGrants } from './grants.js';

const DeviceKindSchema = Type.Union([Type.Literal('camera'), Type.Literal('microphone'), Type.Literal('screen')]);

/** `handlers.media` in the agent config. */
export const MediaOptions = Type.Object(
  {
    /** The ffmpeg executable (path or name on PATH; default `ffmpeg`). */
    ffmpeg: Type.Optional(Type.String({ minLength: 1 })),
    /** Which backend captures: `auto` (a capture page when one is attached, else ffmpeg), `ffmpeg`, `provider`. */
    backend: Type.Optional(Type.Union([Type.Literal('auto'), Type.Literal('ffmpeg'), Type.Literal('provider')])),
    /** Probe the platform's devices besides the configured ones (default true). */
    probe: Type.Optional(Type.Boolean()),
    /** Devices with an explicit ffmpeg input (an RTSP camera, a lavfi test source, a non-default node). */
    devices: Type.Optional(
      Type.Array(
        Type.Object(
          {
            kind: DeviceKindSchema,
            id: Type.String({ minLength: 1 }),
            label: Type.Optional(Type.String()),
            format: Type.String({ minLength: 1 }),
            input: Type.String({ minLength: 1 }),
            input_options: Type.Optional(Type.Array(Type.String())),
            width: Type.Optional(Type.Integer({ minimum: 1 })),
            height: Type.Optional(Type.Integer({ minimum: 1 })),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    /** `false` turns the handler off (no media functions at all). */
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type MediaOptions = Static<typeof MediaOptions>;

export default defineHandler({
  name: 'media',
  title: 'Camera, microphone and screen',
  description: 'Photos, short video clips, audio recordings and screenshots from devices the user has shared, each one confirmed on the device.',
  grantKinds: [cameraGrants, microphoneGrants, screenGrants],
  create(env) {
    if (!Value.Check(MediaOptions, env.options)) {
      const first = [...Value.Errors(MediaOptions, env.options)][0];
      throw new Error(`handlers.media is not valid: ${first ? `${first.path || '/'} ${first.message}` : 'unknown option'}`);
    }
    const o = env.options as MediaOptions;
    if (o.enabled === false) return [];
    let publish = (): void => undefined;
    const ffmpeg = new FfmpegBackend({ onOpenChange: () => publish(), ...(o.ffmpeg ? { ffmpeg: o.ffmpeg } : {}), ...(o.devices ? { devices: o.devices } : {}), ...(o.probe !== undefined ? { probe: o.probe } : {}) });
    const hub = new ProviderHub();
    const svc = new MediaService(ffmpeg, hub, o.backend ?? 'auto');
    env.host?.addLocalMethods(wireMethods(hub.methods()));
    // The status says what is capturing (tray icon state), which capture page is attached, and how many
    // devices are open now / were opened since start (a Deny must leave both unchanged).
    publish = () => env.host?.setStatus({ capturing: svc.inUse(), providers: hub.attached(), open: svc.openCount, opened: ffmpeg.opened + hub.opened });
    svc.onChange(publish);
    publish();
    return {
      functions: mediaFunctions(env, svc),
      // Pausing the agent stops every capture at once (nothing is kept); shutdown aborts calls anyway.
      onPause: () => svc.stopAll(),
      dispose: () => {
        svc.stopAll();
        env.host?.setStatus(undefined);
      },
    };
  },
});
