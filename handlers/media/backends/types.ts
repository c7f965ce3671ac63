/**
 * The one interface both capture backends implement (ffmpeg child process, capture page provider). No SDK
 * imports: backends report failures as `CaptureError` with a wire error type, and the functions file maps
 * them onto the SDK.
 */

/** What kind of device a capture uses. */
export type DeviceKind = 'camera' | 'microphone' | 'screen';

/** One device a backend can open. */
export interface DeviceInfo {
  kind: DeviceKind;
  /** Canonical id: stable for the backend (a device node, an avfoundation index, a display name, a provider's device id). */
  id: string;
  label: string;
  /** Supported resolutions where the backend knows them ("640x480"). */
  resolutions?: string[];
  /** Screen size in pixels, where known. */
  width?: number;
  height?: number;
}

/** What one capture produces. */
export type CaptureOp =
  | { op: 'photo'; format: 'jpeg' | 'png'; width?: number; height?: number; quality?: number }
  | { op: 'clip'; format: 'webm' | 'mp4'; durationMs: number; width?: number; height?: number; audio?: boolean }
  | { op: 'audio'; format: 'wav' | 'opus' | 'webm'; durationMs: number }
  | { op: 'screenshot'; format: 'png' | 'jpeg'; scale?: number; quality?: number };

/** A capture request: which device, what to make, where to write it. */
export type CaptureRequest = CaptureOp & { device: DeviceInfo; outPath: string };

/** Progress while recording: elapsed time, and for audio the peak level 0..1 where known. */
export interface CaptureProgress {
  elapsedMs: number;
  totalMs: number;
  level?: number;
}

/** What a finished capture reports about the file it wrote. */
export interface CaptureResult {
  mediaType: string;
  width?: number;
  height?: number;
  durationMs?: number;
}

/** The wire error types a backend may report (PROTOCOL.md §2). */
export type CaptureErrorType = 'device_unavailable' | 'device_busy' | 'permission_denied' | 'execution_failed' | 'invalid_arguments' | 'paused';

/** A typed backend failure; `message` says what to do and never holds captured data. */
export class CaptureError extends Error {
  constructor(
    readonly type: CaptureErrorType,
    message: string,
    readonly reason?: string,
  ) {
    super(message);
    this.name = 'CaptureError';
  }
}

/** A capture backend. */
export interface CaptureBackend {
  /** Short name for status and docs (`ffmpeg`, `provider`). */
  readonly name: string;
  /** Devices of one kind this backend can open now. */
  list(kind: DeviceKind, signal?: AbortSignal): Promise<DeviceInfo[]>;
  /**
   * Captures into `req.outPath`. On abort it stops the device at once and rejects with the signal's reason;
   * the caller removes the partial file.
   */
  capture(req: CaptureRequest, signal: AbortSignal, onProgress?: (p: CaptureProgress) => void): Promise<CaptureResult>;
  /** Devices open right now (tests check it is back to 0 after cancel, and stays 0 after a Deny). */
  readonly openCount: number;
  /** How many times a device was opened since start. */
  readonly opened: number;
}

/** Media type of each output format. */
export const MEDIA_TYPES: Readonly<Record<string, string>> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  webm: 'video/webm',
  mp4: 'video/mp4',
  wav: 'audio/wav',
  opus: 'audio/ogg',
};

/** The media type of a capture's output (audio in WebM is `audio/webm`). */
export function mediaTypeOf(op: CaptureOp): string {
  if (op.op === 'audio' && op.format === 'webm') return 'audio/webm';
  return MEDIA_TYPES[op.format] ?? 'application/octet-stream';
}
