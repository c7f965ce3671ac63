/**
 * JSON Schemas (TypeBox) of the printer functions' arguments and results: one source for the descriptors
 * and for the types the glue works with.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';

/** Inline documents: at most 256 KiB once decoded (PROTOCOL.md §9); larger ones come as blobs. */
export const INLINE_MAX_BYTES = 256 * 1024;
const INLINE_MAX_CHARS = Math.ceil(INLINE_MAX_BYTES / 3) * 4;

const Blob = Type.Object(
  {
    blob_id: Type.String({ minLength: 1, maxLength: 200 }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    size: Type.Integer({ minimum: 0 }),
    media_type: Type.String({ minLength: 1, maxLength: 200 }),
  },
  { additionalProperties: false, description: 'A blob uploaded to the bridge (PROTOCOL.md §9).' },
);

/** `printer`: an alias or id from grants.printers. */
export const PrinterArg = Type.String({ minLength: 1, maxLength: 2048, description: 'The printer: its alias from grants.printers (e.g. "front-desk"), its queue name ("q1"), or its granted URI (ipp://…, socket://…).' });
const JobId = Type.Integer({ minimum: 1, maximum: 2147483647 });

const DocumentProps = {
  blob: Type.Optional(Blob),
  encoding: Type.Optional(Type.Literal('base64')),
  data: Type.Optional(Type.String({ maxLength: INLINE_MAX_CHARS, contentEncoding: 'base64', description: 'The document inline as base64, at most 256 KiB decoded; larger documents go as a blob.' })),
  document_name: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'The document\'s file name, shown to the user (e.g. invoice.pdf).' })),
};

/** Print options. */
export const Options = Type.Object(
  {
    copies: Type.Optional(Type.Integer({ minimum: 1, maximum: 999 })),
    media: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'A PWG media name the printer lists, e.g. iso_a4_210x297mm or na_letter_8.5x11in.' })),
    sides: Type.Optional(Type.Union([Type.Literal('one-sided'), Type.Literal('two-sided-long-edge'), Type.Literal('two-sided-short-edge')])),
    color_mode: Type.Optional(Type.Union([Type.Literal('color'), Type.Literal('monochrome'), Type.Literal('auto')])),
    orientation: Type.Optional(Type.Union([Type.Literal('portrait'), Type.Literal('landscape'), Type.Literal('reverse-landscape'), Type.Literal('reverse-portrait')])),
    page_ranges: Type.Optional(Type.Array(Type.Object({ from: Type.Integer({ minimum: 1 }), to: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }), { minItems: 1, maxItems: 50 })),
    fit_to_page: Type.Optional(Type.Boolean()),
    job_name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  },
  { additionalProperties: false },
);

/** printer.print arguments. */
export const PrintInput = Type.Object(
  {
    printer: PrinterArg,
    ...DocumentProps,
    text: Type.Optional(Type.String({ maxLength: 1024 * 1024, description: 'Plain text to print; it is laid out on pages in a font that covers Chinese.' })),
    options: Type.Optional(Options),
    wait: Type.Optional(Type.Union([Type.Literal('accepted'), Type.Literal('completed')], { description: 'accepted (default): return once the printer has the job; completed: wait (within the call\'s timeout) until it is completed, canceled or aborted.' })),
  },
  { additionalProperties: false },
);
/** printer.print arguments (type). */
export type PrintArgs = Static<typeof PrintInput>;

/** printer.print_raw arguments. */
export const RawInput = Type.Object(
  {
    printer: PrinterArg,
    ...DocumentProps,
    copies: Type.Optional(Type.Integer({ minimum: 1, maximum: 999, description: 'Only for IPP printers and queues; AppSocket printers get the bytes once.' })),
    job_name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  },
  { additionalProperties: false },
);
/** printer.print_raw arguments (type). */
export type RawArgs = Static<typeof RawInput>;

/** One printer argument. */
export const OnePrinterInput = Type.Object({ printer: PrinterArg }, { additionalProperties: false });
/** A printer and a job. */
export const JobInput = Type.Object({ printer: PrinterArg, job_id: JobId }, { additionalProperties: false });
/** printer.list_jobs arguments. */
export const ListJobsInput = Type.Object(
  {
    printer: PrinterArg,
    which: Type.Optional(Type.Union([Type.Literal('not-completed'), Type.Literal('completed'), Type.Literal('all')], { description: 'Default not-completed.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  },
  { additionalProperties: false },
);

const JobState = Type.Union(['pending', 'pending-held', 'processing', 'processing-stopped', 'canceled', 'aborted', 'completed', 'sent'].map((s) => Type.Literal(s)));

/** A job as reported. */
export const Job = Type.Object(
  {
    job_id: Type.Optional(Type.Integer()),
    state: JobState,
    reasons: Type.Array(Type.String()),
    name: Type.Optional(Type.String()),
    pages_completed: Type.Optional(Type.Integer()),
    message: Type.Optional(Type.String()),
    created_at: Type.Optional(Type.String()),
    completed_at: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);

const Supports = Type.Object(
  {
    document_formats: Type.Array(Type.String()),
    media: Type.Array(Type.String()),
    media_default: Type.Optional(Type.String()),
    sides: Type.Array(Type.String()),
    color_modes: Type.Array(Type.String()),
    orientations: Type.Array(Type.String()),
    copies: Type.Optional(Type.Object({ min: Type.Integer(), max: Type.Integer() }, { additionalProperties: false })),
    page_ranges: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/** A printer as listed. */
export const Printer = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    alias: Type.Optional(Type.String()),
    granted: Type.Boolean(),
    uri: Type.Optional(Type.String()),
    make_and_model: Type.Optional(Type.String()),
    location: Type.Optional(Type.String()),
    state: Type.Union([Type.Literal('idle'), Type.Literal('processing'), Type.Literal('stopped'), Type.Literal('unknown')]),
    reasons: Type.Array(Type.String()),
    message: Type.Optional(Type.String()),
    accepting_jobs: Type.Optional(Type.Boolean()),
    is_default: Type.Boolean(),
    kind: Type.Union([Type.Literal('ipp'), Type.Literal('cups'), Type.Literal('socket'), Type.Literal('windows')]),
    supports: Type.Optional(Supports),
  },
  { additionalProperties: false },
);

/** printer.list result. */
export const ListOutput = Type.Object({ printers: Type.Array(Printer), spooler: Type.Union([Type.Literal('cups'), Type.Literal('windows')]), spooler_reachable: Type.Boolean() }, { additionalProperties: false });
/** printer.get_attributes result. */
export const AttributesOutput = Type.Object({ printer: Printer, attributes: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'Every IPP attribute the printer reports, enum values by name.' })) }, { additionalProperties: false });
/** printer.print and print_raw result. */
export const PrintOutput = Type.Object(
  {
    printer: Type.String(),
    job: Job,
    format: Type.String(),
    converted_from: Type.Optional(Type.String()),
    size: Type.Integer({ minimum: 0 }),
    printer_state: Type.Optional(Type.Object({ state: Type.String(), reasons: Type.Array(Type.String()) }, { additionalProperties: false, description: 'The printer\'s state when the job was sent (e.g. stopped, paused: the job waits).' })),
  },
  { additionalProperties: false },
);
/** job_status / cancel_job result. */
export const JobOutput = Type.Object({ printer: Type.String(), job: Job }, { additionalProperties: false });
/** list_jobs result. */
export const JobsOutput = Type.Object({ printer: Type.String(), jobs: Type.Array(Job) }, { additionalProperties: false });

/** A schema as plain JSON (TypeBox's symbol keys dropped), with an optional oneOf of required sets. */
export function plain(s: TSchema, oneOfRequired?: string[][]): Record<string, unknown> {
  const out = JSON.parse(JSON.stringify(s)) as Record<string, unknown>;
  if (oneOfRequired) out['oneOf'] = oneOfRequired.map((r) => ({ required: r }));
  return out;
}
