/**
 * The printer handler's own vocabulary, shared by the backends and the glue: what a printer and a job
 * look like, the one backend interface every transport implements, and the typed fault the backends
 * throw (the glue turns it into a wire error). No SDK import here on purpose: backends stay testable alone.
 */
import type { JobState } from './ipp/names.js';

/** A printer's state as the printer (or its spooler) reports it. */
export interface PrinterStatus {
  state: 'idle' | 'processing' | 'stopped' | 'unknown';
  /** printer-state-reasons without `none` (e.g. `media-empty`, `toner-low`, `paused`). */
  reasons: string[];
  message?: string;
  accepting_jobs?: boolean;
}

/** What a printer supports, as far as it says. */
export interface PrinterSupports {
  document_formats: string[];
  media: string[];
  media_default?: string;
  sides: string[];
  color_modes: string[];
  orientations: string[];
  copies?: { min: number; max: number };
  page_ranges?: boolean;
}

/** A printer as listed. */
export interface PrinterInfo extends PrinterStatus {
  /** The canonical id: a CUPS queue name, an ipp(s):// URI, a socket:// URI, or a Windows printer name. */
  id: string;
  name: string;
  uri?: string;
  make_and_model?: string;
  location?: string;
  is_default: boolean;
  kind: 'ipp' | 'cups' | 'socket' | 'windows';
  supports?: PrinterSupports;
}

/** A job as the printer reports it. */
export interface JobInfo {
  /** The printer's job id; absent for AppSocket, which has no jobs. */
  job_id?: number;
  /** The IPP job-state name; `sent` for AppSocket, which reports nothing after the bytes went out. */
  state: JobState | 'sent';
  reasons: string[];
  name?: string;
  pages_completed?: number;
  message?: string;
  created_at?: string;
  completed_at?: string;
}

/** Print options, in the handler's argument names (mapped to IPP attributes by the IPP backend). */
export interface PrintOptions {
  copies?: number;
  media?: string;
  sides?: 'one-sided' | 'two-sided-long-edge' | 'two-sided-short-edge';
  color_mode?: 'color' | 'monochrome' | 'auto';
  orientation?: 'portrait' | 'landscape' | 'reverse-landscape' | 'reverse-portrait';
  page_ranges?: { from: number; to: number }[];
  fit_to_page?: boolean;
  job_name?: string;
}

/** One job to submit: the document is a file on disk (never held whole in memory). */
export interface JobRequest {
  file: string;
  size: number;
  /** MIME type as sent; `application/vnd.cups-raw` / `application/octet-stream` for raw jobs. */
  format: string;
  options: PrintOptions;
  raw: boolean;
  /** Who asked (job-originating-user-name / requesting-user-name). */
  user: string;
}

/** Timing knobs the backends honour. */
export interface BackendTimings {
  /** How long a busy printer is retried before device_busy. */
  busyRetryMs: number;
  /** Connect timeout for a printer that does not answer at all. */
  connectTimeoutMs: number;
}

/** The interface every transport implements (IPP, AppSocket, Windows spooler). */
export interface PrinterBackend {
  readonly kind: PrinterInfo['kind'];
  describe(signal: AbortSignal): Promise<PrinterInfo>;
  submit(job: JobRequest, signal: AbortSignal, onBytes?: (sent: number) => void): Promise<JobInfo>;
  job(jobId: number, signal: AbortSignal): Promise<JobInfo>;
  jobs(which: 'not-completed' | 'completed' | 'all', limit: number, signal: AbortSignal): Promise<JobInfo[]>;
  cancel(jobId: number, signal: AbortSignal): Promise<JobInfo>;
}

/** Wire error types a backend may report (the glue maps them 1:1). */
export type FaultType = 'device_unavailable' | 'device_busy' | 'permission_denied' | 'invalid_arguments' | 'execution_failed' | 'payload_too_large';

/** A typed failure from a backend or the conversion layer; messages are one sentence with no document data. */
export class PrinterFault extends Error {
  override readonly name = 'PrinterFault';
  constructor(
    readonly type: FaultType,
    message: string,
    readonly details: Record<string, unknown> = {},
    /** Whether bytes may have reached the printer (side_effects `possible`). */
    readonly maybeSent = false,
  ) {
    super(message);
  }
}
