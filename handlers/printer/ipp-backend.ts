/**
 * The IPP backend (RFC 8011): a network printer spoken to directly (`ipp://printer.local/ipp/print`) or a
 * CUPS queue (`ipp://localhost:631/printers/<name>`); CUPS queues are listed with CUPS-Get-Printers.
 * Job states are reported exactly as the printer reports them.
 */
import { sleep } from './wait.js';
import { ensureOk, ippCall, statusFault, targetOf, type IppResponse } from './ipp/client.js';
import { groupsOf, plainAttributes, v, type IppAttribute, type IppGroup, type PlainValue } from './ipp/codec.js';
import { ENUM_NAMES, JOB_STATES, ORIENTATIONS, PRINTER_STATES } from './ipp/names.js';
import { PrinterFault, type BackendTimings, type JobInfo, type JobRequest, type PrintOptions, type PrinterBackend, type PrinterInfo, type PrinterSupports } from './model.js';

type Plain = { [k: string]: PlainValue | PlainValue[] };

/** Printer attributes asked for in lists and descriptions (full descriptions ask for `all`). */
export const PRINTER_ATTRS = [
  'printer-name', 'printer-uri-supported', 'printer-make-and-model', 'printer-info', 'printer-location', 'printer-state',
  'printer-state-reasons', 'printer-state-message', 'printer-is-accepting-jobs', 'document-format-supported', 'media-supported',
  'media-default', 'sides-supported', 'print-color-mode-supported', 'orientation-requested-supported', 'copies-supported',
  'page-ranges-supported', 'printer-type',
];

const JOB_ATTRS = [
  'job-id', 'job-state', 'job-state-reasons', 'job-state-message', 'job-name', 'job-impressions-completed', 'job-media-sheets-completed',
  'date-time-at-creation', 'date-time-at-completed', 'time-at-creation', 'time-at-completed',
];

const list = (x: PlainValue | PlainValue[] | undefined): PlainValue[] => (x === undefined || x === null ? [] : Array.isArray(x) ? x : [x]);
const strings = (x: PlainValue | PlainValue[] | undefined): string[] => list(x).filter((s): s is string => typeof s === 'string');
const str = (x: PlainValue | PlainValue[] | undefined): string | undefined => strings(x)[0];
const num = (x: PlainValue | PlainValue[] | undefined): number | undefined => list(x).find((n): n is number => typeof n === 'number');
const reasonsOf = (x: PlainValue | PlainValue[] | undefined): string[] => strings(x).filter((r) => r !== 'none');

/** The enum values of a plain attribute set replaced by their names (printer-state 3 → idle, …). */
export function namedAttributes(p: Plain): Plain {
  const out: Plain = {};
  for (const [k, val] of Object.entries(p)) {
    const names = ENUM_NAMES[k];
    out[k] = names ? (Array.isArray(val) ? val.map((x) => (typeof x === 'number' ? (names[x] ?? x) : x)) : typeof val === 'number' ? (names[val] ?? val) : val) : val;
  }
  return out;
}

/** What a printer supports, from its attributes. */
export function supportsOf(p: Plain): PrinterSupports {
  const copies = list(p['copies-supported']).find((x): x is { lower: number; upper: number } => typeof x === 'object' && x !== null && 'lower' in x);
  const orientNames = ENUM_NAMES['orientation-requested-supported'] ?? {};
  const pr = list(p['page-ranges-supported'])[0];
  return {
    document_formats: strings(p['document-format-supported']),
    media: strings(p['media-supported']),
    ...(str(p['media-default']) ? { media_default: str(p['media-default'])! } : {}),
    sides: strings(p['sides-supported']),
    color_modes: strings(p['print-color-mode-supported']),
    orientations: list(p['orientation-requested-supported']).map((x) => (typeof x === 'number' ? (orientNames[x] ?? String(x)) : String(x))),
    ...(copies ? { copies: { min: copies.lower, max: copies.upper } } : {}),
    ...(typeof pr === 'boolean' ? { page_ranges: pr } : {}),
  };
}

/** A printer description from its attributes. */
export function infoFromAttrs(p: Plain, id: string, kind: 'ipp' | 'cups', uri: string, isDefault: boolean): PrinterInfo {
  const stateNum = num(p['printer-state']);
  const accepting = list(p['printer-is-accepting-jobs'])[0];
  return {
    id,
    name: str(p['printer-name']) ?? id,
    uri,
    ...(str(p['printer-make-and-model']) ? { make_and_model: str(p['printer-make-and-model'])! } : {}),
    ...(str(p['printer-location']) ? { location: str(p['printer-location'])! } : {}),
    state: stateNum !== undefined ? (PRINTER_STATES[stateNum] ?? 'unknown') : 'unknown',
    reasons: reasonsOf(p['printer-state-reasons']),
    ...(str(p['printer-state-message']) ? { message: str(p['printer-state-message'])! } : {}),
    ...(typeof accepting === 'boolean' ? { accepting_jobs: accepting } : {}),
    is_default: isDefault,
    kind,
    supports: supportsOf(p),
  };
}

/** A job from its attributes. */
export function jobFromAttrs(p: Plain): JobInfo {
  const stateNum = num(p['job-state']);
  const pages = num(p['job-impressions-completed']) ?? num(p['job-media-sheets-completed']);
  const created = str(p['date-time-at-creation']);
  const completed = str(p['date-time-at-completed']);
  const id = num(p['job-id']);
  return {
    ...(id !== undefined ? { job_id: id } : {}),
    state: stateNum !== undefined ? (JOB_STATES[stateNum] ?? 'pending') : 'pending',
    reasons: reasonsOf(p['job-state-reasons']),
    ...(str(p['job-name']) ? { name: str(p['job-name'])! } : {}),
    ...(pages !== undefined ? { pages_completed: pages } : {}),
    ...(str(p['job-state-message']) ? { message: str(p['job-state-message'])! } : {}),
    ...(created ? { created_at: created } : {}),
    ...(completed ? { completed_at: completed } : {}),
  };
}

/** The job-template attributes for print options (RFC 8011 §5.2; print-scaling from PWG 5100.13). */
export function jobTemplate(o: PrintOptions): IppAttribute[] {
  const a: IppAttribute[] = [];
  if (o.copies !== undefined) a.push({ name: 'copies', values: [v.int(o.copies)] });
  if (o.media) a.push({ name: 'media', values: [v.keyword(o.media)] });
  if (o.sides) a.push({ name: 'sides', values: [v.keyword(o.sides)] });
  if (o.color_mode) a.push({ name: 'print-color-mode', values: [v.keyword(o.color_mode)] });
  if (o.orientation) a.push({ name: 'orientation-requested', values: [v.enum(ORIENTATIONS[o.orientation])] });
  if (o.page_ranges?.length) a.push({ name: 'page-ranges', values: o.page_ranges.map((r) => v.range(r.from, r.to)) });
  if (o.fit_to_page !== undefined) a.push({ name: 'print-scaling', values: [v.keyword(o.fit_to_page ? 'fit' : 'none')] });
  return a;
}

/** One IPP printer or CUPS queue. */
export class IppBackend implements PrinterBackend {
  private readonly target: string;
  constructor(
    /** The printer's IPP URI. */
    readonly uri: string,
    /** The canonical id it is known by (queue name for CUPS, the URI for direct printers). */
    readonly id: string,
    readonly kind: 'ipp' | 'cups',
    private readonly timings: BackendTimings,
    private readonly user: string,
    private readonly isDefault: () => Promise<boolean> = async () => false,
  ) {
    this.target = targetOf(uri);
  }

  private call(op: Parameters<typeof ippCall>[1], attrs: IppAttribute[], more: IppGroup[], signal: AbortSignal, document?: { file: string; size: number }, onBytes?: (n: number) => void): Promise<IppResponse> {
    return ippCall(this.uri, op, [{ name: 'printer-uri', values: [v.uri(this.uri)] }, ...attrs], more, {
      signal,
      connectTimeoutMs: this.timings.connectTimeoutMs,
      ...(document ? { document } : {}),
      ...(onBytes ? { onBytes } : {}),
    });
  }

  /** All the printer's attributes (`requested-attributes: all`), enum values named. */
  async attributes(signal: AbortSignal, which: string[] = ['all']): Promise<Plain> {
    const res = await this.call('Get-Printer-Attributes', [{ name: 'requested-attributes', values: which.map(v.keyword) }], [], signal);
    if (res.statusName === 'client-error-not-found') {
      // The printer (e.g. a CUPS queue) does not exist: absent, like an unplugged device.
      throw new PrinterFault('device_unavailable', `There is no printer "${this.id}" at ${this.target}.`, { reason: 'not_found', ipp_status: res.statusName });
    }
    const r = ensureOk(res, 'describe itself', this.target);
    const printer = groupsOf(r.message, 'printer')[0];
    if (!printer) throw new PrinterFault('execution_failed', `The printer at ${this.target} answered without printer attributes.`, { reason: 'bad_ipp_response' });
    return printer;
  }

  async describe(signal: AbortSignal): Promise<PrinterInfo> {
    const [p, isDefault] = await Promise.all([this.attributes(signal, PRINTER_ATTRS), this.isDefault().catch(() => false)]);
    const info = infoFromAttrs(p, this.id, this.kind, this.uri, isDefault);
    if (this.kind === 'cups') info.name = this.id;
    return info;
  }

  async submit(job: JobRequest, signal: AbortSignal, onBytes?: (sent: number) => void): Promise<JobInfo> {
    const ops: IppAttribute[] = [
      { name: 'requesting-user-name', values: [v.name(this.user)] },
      { name: 'job-name', values: [v.name(job.options.job_name ?? 'document')] },
      { name: 'document-format', values: [v.mime(job.format)] },
    ];
    const template = job.raw ? (job.options.copies ? jobTemplate({ copies: job.options.copies }) : []) : jobTemplate(job.options);
    const more: IppGroup[] = template.length ? [{ group: 'job', attributes: template }] : [];
    const deadline = Date.now() + this.timings.busyRetryMs;
    let delay = 250;
    for (;;) {
      const r = await this.call('Print-Job', ops, more, signal, { file: job.file, size: job.size }, onBytes);
      const fault = r.statusName.startsWith('successful') ? undefined : statusFault(r, 'take the job', this.target);
      if (fault?.type === 'device_busy' && Date.now() + delay < deadline) {
        // RFC 8011 §4.1.7: server-error-busy invites a retry later; keep retrying within the budget.
        await sleep(delay, signal);
        delay = Math.min(delay * 2, 2000);
        continue;
      }
      if (fault) throw fault;
      const j = groupsOf(r.message, 'job')[0] ?? {};
      const info = jobFromAttrs(j);
      if (info.job_id === undefined) throw new PrinterFault('execution_failed', `The printer at ${this.target} accepted the job without a job id.`, { reason: 'bad_ipp_response' }, true);
      if (r.statusName !== 'successful-ok') info.reasons = [...info.reasons, r.statusName];
      return info;
    }
  }

  async job(jobId: number, signal: AbortSignal): Promise<JobInfo> {
    const r = ensureOk(
      await this.call('Get-Job-Attributes', [{ name: 'job-id', values: [v.int(jobId)] }, { name: 'requesting-user-name', values: [v.name(this.user)] }, { name: 'requested-attributes', values: JOB_ATTRS.map(v.keyword) }], [], signal),
      `report job ${jobId}`,
      this.target,
    );
    return { job_id: jobId, ...jobFromAttrs(groupsOf(r.message, 'job')[0] ?? {}) };
  }

  async jobs(which: 'not-completed' | 'completed' | 'all', limit: number, signal: AbortSignal): Promise<JobInfo[]> {
    const r = ensureOk(
      await this.call(
        'Get-Jobs',
        [
          { name: 'requesting-user-name', values: [v.name(this.user)] },
          { name: 'limit', values: [v.int(limit)] },
          { name: 'which-jobs', values: [v.keyword(which)] },
          { name: 'requested-attributes', values: JOB_ATTRS.map(v.keyword) },
        ],
        [],
        signal,
      ),
      'list its jobs',
      this.target,
    );
    return groupsOf(r.message, 'job').map(jobFromAttrs);
  }

  async cancel(jobId: number, signal: AbortSignal): Promise<JobInfo> {
    const r = await this.call('Cancel-Job', [{ name: 'job-id', values: [v.int(jobId)] }, { name: 'requesting-user-name', values: [v.name(this.user)] }], [], signal);
    if (r.statusName === 'client-error-not-possible') {
      // Already finished (or past the point where it can stop): report the state the printer gives.
      const now = await this.job(jobId, signal).catch(() => undefined);
      throw new PrinterFault('execution_failed', `Job ${jobId} can no longer be cancelled${now ? `; it is ${now.state}` : ''}.`, { ipp_status: r.statusName, reason: 'not_cancellable', ...(now ? { state: now.state } : {}) });
    }
    ensureOk(r, `cancel job ${jobId}`, this.target);
    return this.job(jobId, signal).catch(() => ({ job_id: jobId, state: 'canceled' as const, reasons: [] }));
  }
}

/** The CUPS server on this machine (or the one `cups_server` names): its queues and its default. */
export class CupsServer {
  constructor(
    /** host:port of the scheduler. */
    readonly hostPort: string,
    private readonly timings: BackendTimings,
    private readonly user: string,
  ) {}

  /** The IPP URI of a queue. */
  queueUri(name: string): string {
    return `ipp://${this.hostPort}/printers/${encodeURIComponent(name)}`;
  }

  backend(name: string): IppBackend {
    return new IppBackend(this.queueUri(name), name, 'cups', this.timings, this.user, async () => (await this.defaultName(AbortSignal.timeout(this.timings.connectTimeoutMs))) === name);
  }

  /** The default queue's name, if one is set. */
  async defaultName(signal: AbortSignal): Promise<string | undefined> {
    const r = await ippCall(`ipp://${this.hostPort}/`, 'CUPS-Get-Default', [{ name: 'requested-attributes', values: [v.keyword('printer-name')] }], [], { signal, connectTimeoutMs: this.timings.connectTimeoutMs });
    if (r.statusName !== 'successful-ok') return undefined;
    return str(groupsOf(r.message, 'printer')[0]?.['printer-name']);
  }

  /** Every queue (CUPS-Get-Printers), described. */
  async list(signal: AbortSignal): Promise<PrinterInfo[]> {
    const r = ensureOk(
      await ippCall(`ipp://${this.hostPort}/`, 'CUPS-Get-Printers', [{ name: 'requested-attributes', values: PRINTER_ATTRS.map(v.keyword) }], [], { signal, connectTimeoutMs: this.timings.connectTimeoutMs }),
      'list its printers',
      this.hostPort,
    );
    const def = await this.defaultName(signal).catch(() => undefined);
    return groupsOf(r.message, 'printer').map((p) => {
      const name = str(p['printer-name']) ?? '?';
      return { ...infoFromAttrs(p, name, 'cups', this.queueUri(name), name === def), name };
    });
  }
}

/** Plain attributes of an attribute list (re-exported for tests). */
export { plainAttributes };
