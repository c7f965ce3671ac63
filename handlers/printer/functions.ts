/**
 * The printer functions: thin glue between the handler SDK and the backends. Everything that decides
 * something (grants, formats, options, IPP, sockets, PowerShell) lives in its own SDK-free file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { defineFunction, fail, WireError, type AnyFunctionDefinition, type CallContext, type CallResource, type DescriptorInput, type GrantsView, type Logger, type Message } from '../../src/sdk/index.js';
import en from './i18n/en.json' with { type: 'json' };
import { describePrint, describeRaw, documentSize, render } from './describe.js';
import { findGrant, notGrantedMessage, type PrinterGrant } from './grants.js';
import { IppBackend, namedAttributes } from './ipp-backend.js';
import { PrinterFault, type JobInfo, type PrintOptions, type PrinterBackend } from './model.js';
import { checkOptions, prepareDocument, waitForEnd } from './print-job.js';
import { Printers } from './printers.js';
import {
  AttributesOutput, JobInput, JobOutput, JobsOutput, ListJobsInput, ListOutput, OnePrinterInput, PrintInput, PrintOutput, RawInput, plain,
  type PrintArgs, type RawArgs,
} from './schemas.js';
import { Type } from '@sinclair/typebox';

/** What the functions share. */
export interface PrinterEnv {
  readonly printers: Printers;
  /** The live grants (config plus what the user added or removed). */
  readonly grants: GrantsView;
  readonly log: Logger;
}

/** The `printers` grants as they are now, in this handler's normal form. */
function grantsOf(view: GrantsView): PrinterGrant[] {
  return view.list('printers').map((g) => ({ kind: 'printers', id: g.id, ...(g.alias ? { alias: g.alias } : {}), ...(g.ask ? { ask: g.ask } : {}) }));
}

const RISK_READ = { read_only: true, destructive: false, idempotent: true, physical: false };

function descriptor(d: Pick<DescriptorInput, 'id' | 'name' | 'description' | 'permission_level' | 'risk' | 'input_schema' | 'output_schema'> & Partial<DescriptorInput>): DescriptorInput {
  return { version: '1.0.0', capability_type: 'print', access: 'restricted', confirmation: 'policy', timeout_ms_default: 30_000, timeout_ms_max: 120_000, cancellable: true, locks: [], ...d };
}

/** A backend fault as a wire error; aborts pass through for the host to report. */
function toWire(e: unknown, signal: AbortSignal): unknown {
  if (signal.aborted || e instanceof WireError || !(e instanceof PrinterFault)) return e;
  return new WireError(e.type, e.message, { details: e.details, sideEffects: e.maybeSent ? 'possible' : 'none' });
}

async function guarded<T>(ctx: CallContext, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw toWire(e, ctx.signal);
  }
}

/** The granted printer a `printer` argument names, or permission_denied (no prompt). */
function granted(view: GrantsView, name: string): PrinterGrant {
  const g = findGrant(grantsOf(view), name);
  if (!g) fail('permission_denied', notGrantedMessage(name), { details: { reason: 'not_granted' } });
  return g;
}

/**
 * The printer a call names, resolved before consent: an ungranted one ends `rejected/permission_denied`
 * with no prompt. Spoolers queue jobs, so IPP printers take no lock; an AppSocket printer takes one
 * connection at a time, so its jobs are serialised by the default lock (`printers:socket://…`).
 */
function printerResource(view: GrantsView, name: string): CallResource[] {
  const g = granted(view, name);
  return [{ kind: 'printers', id: g.id, ...(g.alias ? { label: g.alias } : {}), ...(g.ask ? { ask: g.ask } : {}), ...(/^socket:/i.test(g.id) ? {} : { lock: false as const }) }];
}

const labelOf = (r: readonly CallResource[], name: string) => r[0]?.label ?? r[0]?.id ?? name;
const text = (m: Message) => render(en, { key: m.key, params: (m.params ?? {}) as Record<string, string | number> });

/** Runs `fn` with a private 0700 folder of the call (the host removes it when the call ends). */
async function withTempDir<T>(ctx: CallContext, fn: (dir: string) => Promise<T>): Promise<T> {
  return fn(await ctx.tempDir());
}

/** Refuses a document over the limit before any byte moves. */
function checkSize(env: PrinterEnv, size: number): void {
  const limit = env.printers.settings.maxDocumentBytes;
  if (size > limit) fail('payload_too_large', `The document is ${size} bytes, over this device's print limit of ${limit} bytes.`, { details: { size, limit } });
}

/** Puts the document (blob, inline or text) into `dir`; contents are never logged. */
async function materialize(a: { blob?: RawArgs['blob']; data?: string; text?: string }, dir: string, ctx: CallContext): Promise<{ file: string; size: number }> {
  const file = path.join(dir, 'document');
  if (a.blob) await ctx.blobs.downloadToFile(a.blob, file, ctx.signal);
  else if (a.data !== undefined) await fs.promises.writeFile(file, Buffer.from(a.data, 'base64'), { mode: 0o600 });
  else await fs.promises.writeFile(file, a.text ?? '', { mode: 0o600 });
  return { file, size: (await fs.promises.stat(file)).size };
}

/** Cancels a job after the call was aborted while waiting; best effort, bounded. */
async function cancelAfterAbort(env: PrinterEnv, backend: PrinterBackend, job: JobInfo): Promise<void> {
  if (job.job_id === undefined) return;
  try {
    await backend.cancel(job.job_id, AbortSignal.timeout(5000));
    env.log.info({ job_id: job.job_id }, 'print job cancelled because its call ended while waiting');
  } catch (e) {
    env.log.warn({ job_id: job.job_id, err: (e as Error).message }, 'could not cancel the print job of an aborted call');
  }
}

function printOptions(a: PrintArgs): PrintOptions {
  const o = a.options ?? {};
  return { ...o, job_name: o.job_name ?? a.document_name ?? 'document' };
}

/** printer.list */
export function listFn(env: PrinterEnv) {
  return defineFunction<Record<string, never>, unknown>({
    descriptor: descriptor({
      id: 'printer.list',
      name: 'List printers',
      description: 'Lists the printers this device can reach: the local print queues (CUPS on Linux and macOS, the Windows spooler) and the network printers shared by URI, each with its alias if shared, make and model, state (idle, processing, stopped with reasons such as media-empty), whether it is the default, and what it supports (formats, media, sides, color, copies).',
      permission_level: 'low',
      risk: RISK_READ,
      examples: ['Which printers can you use here?'],
      input_schema: plain(Type.Object({}, { additionalProperties: false })),
      output_schema: plain(ListOutput),
    }),
    describe: (): Message => ({ key: 'printer.list', params: {} }),
    run: (_a, ctx) => guarded(ctx, async () => env.printers.list(grantsOf(env.grants), ctx.signal)),
  });
}

/** printer.get_attributes */
export function attributesFn(env: PrinterEnv) {
  return defineFunction<{ printer: string }, unknown>({
    descriptor: descriptor({
      id: 'printer.get_attributes',
      name: 'Printer details',
      description: 'Everything one shared printer reports about itself: state and reasons, supported formats, media, sides, color modes, copies, and (for IPP printers and CUPS queues) every IPP attribute.',
      permission_level: 'low',
      risk: RISK_READ,
      examples: ['Does the front-desk printer have paper?', 'What paper sizes does q1 take?'],
      input_schema: plain(OnePrinterInput),
      output_schema: plain(AttributesOutput),
    }),
    resources: (a, { grants }) => printerResource(grants, a.printer),
    describe: (a, r): Message => ({ key: 'printer.get_attributes', params: { printer: labelOf(r, a.printer) } }),
    run: (a, ctx) =>
      guarded(ctx, async () => {
        const g = granted(env.grants, a.printer);
        const backend = env.printers.backendFor(g.id);
        const info = await backend.describe(ctx.signal);
        const attributes = backend instanceof IppBackend ? namedAttributes(await backend.attributes(ctx.signal)) : undefined;
        return { printer: { ...info, id: g.id, granted: true, ...(g.alias ? { alias: g.alias } : {}) }, ...(attributes ? { attributes } : {}) };
      }),
  });
}

/** printer.print */
export function printFn(env: PrinterEnv) {
  return defineFunction<PrintArgs, unknown>({
    descriptor: descriptor({
      id: 'printer.print',
      name: 'Print a document',
      description: 'Prints a PDF, PNG/JPEG image or plain text on a shared printer, from a blob, inline base64 (at most 256 KiB) or text. Text is laid out as PDF in a font that covers Chinese; images the printer does not take are put on a PDF page scaled to fit. Returns the job as the printer reports it (pending or processing: accepted, not yet printed). wait: "completed" waits for the end of the job, within the call\'s timeout; cancelling the call while it waits cancels the job.',
      permission_level: 'high',
      risk: { read_only: false, destructive: false, idempotent: false, physical: true },
      examples: ['Print invoice.pdf twice on the front-desk printer', 'Print this receipt text on A4'],
      input_schema: plain(PrintInput, [['printer', 'blob'], ['printer', 'data'], ['printer', 'text']]),
      output_schema: plain(PrintOutput),
      timeout_ms_default: 120_000,
      timeout_ms_max: 3_600_000,
    }),
    // The size limit is known from the arguments: a document over it is refused before anyone is asked.
    resources: (a, { grants }) => {
      const r = printerResource(grants, a.printer);
      checkSize(env, documentSize(a));
      return r;
    },
    describe: (a, r): Message => describePrint({ ...a, ...(a.options?.copies ? { copies: a.options.copies } : {}) }, labelOf(r, a.printer)),
    run: (a, ctx) =>
      guarded(ctx, async () => {
        const g = granted(env.grants, a.printer);
        checkSize(env, documentSize(a));
        const backend = env.printers.backendFor(g.id);
        const info = await backend.describe(ctx.signal);
        const options = printOptions(a);
        const violations = checkOptions(options, info.supports);
        if (violations.length) fail('invalid_arguments', `The printer cannot do ${violations.map((v) => v.pointer.split('/').pop()).join(', ')} as asked: ${violations[0]!.message}.`, { details: { violations } });
        return withTempDir(ctx, async (dir) => {
          const doc = await materialize(a, dir, ctx);
          const isText = a.text !== undefined;
          if (isText) ctx.progress({ message: text({ key: 'printer.progress.converting' }) });
          const prepared = await prepareDocument({ ...doc, isText }, info.supports?.document_formats ?? [], options, {
            maxConvertBytes: env.printers.settings.maxConvertBytes,
            dir,
            ...(env.printers.settings.cjkFont ? { font: env.printers.settings.cjkFont } : {}),
            title: options.job_name!,
          });
          const sending = text({ key: 'printer.progress.sending' });
          let job = await backend.submit({ file: prepared.file, size: prepared.size, format: prepared.format, options, raw: false, user: env.printers.user }, ctx.signal, (n) =>
            ctx.progress({ progress: n, total: prepared.size, message: sending }),
          );
          env.log.info({ printer: g.id, job_id: job.job_id, bytes: prepared.size, format: prepared.format, converted: !!prepared.converted_from }, 'print job submitted');
          if (a.wait === 'completed') {
            let seen = job;
            try {
              job = await waitForEnd(backend, job, env.printers.settings.pollMs, ctx.signal, (j) => {
                seen = j;
                ctx.progress({ ...(j.pages_completed !== undefined ? { progress: j.pages_completed } : {}), message: text({ key: 'printer.progress.waiting', params: { state: [j.state, ...j.reasons].join(', ') } }) });
              });
            } catch (e) {
              if (ctx.signal.aborted) await cancelAfterAbort(env, backend, job);
              throw e instanceof PrinterFault ? new PrinterFault(e.type, e.message, { ...e.details, job_id: job.job_id, last_state: seen.state }, true) : e;
            }
          }
          return {
            printer: g.alias ?? g.id,
            job,
            format: prepared.format,
            ...(prepared.converted_from ? { converted_from: prepared.converted_from } : {}),
            size: prepared.size,
            printer_state: { state: info.state, reasons: info.reasons },
          };
        });
      }),
  });
}

/** printer.print_raw */
export function printRawFn(env: PrinterEnv) {
  return defineFunction<RawArgs, unknown>({
    descriptor: descriptor({
      id: 'printer.print_raw',
      name: 'Send raw printer data',
      description: 'Sends bytes in the printer\'s own language (ZPL or EPL for label printers, ESC/POS for receipt printers, PCL or PostScript) unchanged to a shared printer: a raw CUPS queue, an IPP printer, or an AppSocket/JetDirect printer (socket://host:9100), from a blob or inline base64. AppSocket printers answer nothing, so their job state is "sent" once every byte went out.',
      permission_level: 'high',
      risk: { read_only: false, destructive: false, idempotent: false, physical: true },
      examples: ['Print this ZPL label on the labels printer'],
      input_schema: plain(RawInput, [['printer', 'blob'], ['printer', 'data']]),
      output_schema: plain(PrintOutput),
      timeout_ms_default: 60_000,
      timeout_ms_max: 600_000,
    }),
    resources: (a, { grants }) => {
      const r = printerResource(grants, a.printer);
      checkSize(env, documentSize(a));
      return r;
    },
    describe: (a, r): Message => describeRaw(a, labelOf(r, a.printer)),
    run: (a, ctx) =>
      guarded(ctx, async () => {
        const g = granted(env.grants, a.printer);
        checkSize(env, documentSize(a));
        const backend = env.printers.backendFor(g.id);
        const format = backend.kind === 'cups' ? 'application/vnd.cups-raw' : 'application/octet-stream';
        return withTempDir(ctx, async (dir) => {
          const doc = await materialize(a, dir, ctx);
          const sending = text({ key: 'printer.progress.sending' });
          const job = await backend.submit(
            { file: doc.file, size: doc.size, format, options: { ...(a.copies ? { copies: a.copies } : {}), job_name: a.job_name ?? a.document_name ?? 'raw document' }, raw: true, user: env.printers.user },
            ctx.signal,
            (n) => ctx.progress({ progress: n, total: doc.size, message: sending }),
          );
          env.log.info({ printer: g.id, job_id: job.job_id, bytes: doc.size }, 'raw print job sent');
          return { printer: g.alias ?? g.id, job, format, size: doc.size };
        });
      }),
  });
}

/** printer.job_status */
export function jobStatusFn(env: PrinterEnv) {
  return defineFunction<{ printer: string; job_id: number }, unknown>({
    descriptor: descriptor({
      id: 'printer.job_status',
      name: 'Print job status',
      description: 'The state of one print job as the printer reports it: pending, pending-held, processing, processing-stopped, canceled, aborted or completed, with reasons (e.g. media-empty) and pages completed when known.',
      permission_level: 'low',
      risk: RISK_READ,
      examples: ['Has job 42 on the front-desk printer finished?'],
      input_schema: plain(JobInput),
      output_schema: plain(JobOutput),
    }),
    resources: (a, { grants }) => printerResource(grants, a.printer),
    describe: (a, r): Message => ({ key: 'printer.job_status', params: { job_id: a.job_id, printer: labelOf(r, a.printer) } }),
    run: (a, ctx) =>
      guarded(ctx, async () => {
        const g = granted(env.grants, a.printer);
        return { printer: g.alias ?? g.id, job: await env.printers.backendFor(g.id).job(a.job_id, ctx.signal) };
      }),
  });
}

/** printer.list_jobs */
export function listJobsFn(env: PrinterEnv) {
  return defineFunction<{ printer: string; which?: 'not-completed' | 'completed' | 'all'; limit?: number }, unknown>({
    descriptor: descriptor({
      id: 'printer.list_jobs',
      name: 'List print jobs',
      description: 'The jobs of one shared printer (not-completed by default, or completed, or all), each with its state, reasons and pages completed when known.',
      permission_level: 'low',
      risk: RISK_READ,
      examples: ['What is waiting on the front-desk printer?'],
      input_schema: plain(ListJobsInput),
      output_schema: plain(JobsOutput),
    }),
    resources: (a, { grants }) => printerResource(grants, a.printer),
    describe: (a, r): Message => ({ key: 'printer.list_jobs', params: { printer: labelOf(r, a.printer) } }),
    run: (a, ctx) =>
      guarded(ctx, async () => {
        const g = granted(env.grants, a.printer);
        return { printer: g.alias ?? g.id, jobs: await env.printers.backendFor(g.id).jobs(a.which ?? 'not-completed', a.limit ?? 100, ctx.signal) };
      }),
  });
}

/** printer.cancel_job */
export function cancelJobFn(env: PrinterEnv) {
  return defineFunction<{ printer: string; job_id: number }, unknown>({
    descriptor: descriptor({
      id: 'printer.cancel_job',
      name: 'Cancel a print job',
      description: 'Cancels one job on a shared printer and returns its state afterwards (canceled, or the state it reached if it could no longer be stopped).',
      permission_level: 'high',
      risk: { read_only: false, destructive: true, idempotent: true, physical: true },
      examples: ['Cancel job 42 on the front-desk printer'],
      input_schema: plain(JobInput),
      output_schema: plain(JobOutput),
    }),
    resources: (a, { grants }) => printerResource(grants, a.printer),
    describe: (a, r): Message => ({ key: 'printer.cancel_job', params: { job_id: a.job_id, printer: labelOf(r, a.printer) } }),
    run: (a, ctx) =>
      guarded(ctx, async () => {
        const g = granted(env.grants, a.printer);
        return { printer: g.alias ?? g.id, job: await env.printers.backendFor(g.id).cancel(a.job_id, ctx.signal) };
      }),
  });
}

/** Every function, in id order. */
export function printerFunctions(env: PrinterEnv): AnyFunctionDefinition[] {
  return [cancelJobFn(env), attributesFn(env), jobStatusFn(env), listFn(env), listJobsFn(env), printFn(env), printRawFn(env)];
}
