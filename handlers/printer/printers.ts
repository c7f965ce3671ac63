/**
 * From a granted printer id to the backend that speaks to it, and the list of printers this device can
 * reach: the local spooler's queues (CUPS on Linux and macOS, Get-Printer on Windows) plus the network
 * printers granted by URI.
 */
import os from 'node:os';
import { CupsServer, IppBackend } from './ipp-backend.js';
import { PrinterFault, type BackendTimings, type PrinterBackend, type PrinterInfo } from './model.js';
import { SocketBackend } from './socket-backend.js';
import { isUri, type PrinterGrant } from './grants.js';
import { listWindowsPrinters, powershell, WindowsBackend, type PsRunner } from './windows.js';

/** The handler's options (`handlers.printer` in the config), with defaults. */
export interface PrinterSettings {
  /** Documents larger than this are refused before any byte moves (default 50 MiB). */
  maxDocumentBytes: number;
  /** Text and images larger than this are not converted (default 20 MiB). */
  maxConvertBytes: number;
  busyRetryMs: number;
  connectTimeoutMs: number;
  /** How long to wait for an AppSocket printer to close after the last byte. */
  rawCloseWaitMs: number;
  /** How often a waiting print asks for the job's state. */
  pollMs: number;
  /** host:port of the CUPS scheduler (default: $CUPS_SERVER when it is host:port, else localhost:631). */
  cupsServer: string;
  /** A font file (optionally `path#PostScriptName` for a collection) for text; default: see convert.ts. */
  cjkFont?: string;
}

const MiB = 1024 * 1024;

function int(o: Record<string, unknown>, key: string, def: number, min: number): number {
  const x = o[key];
  if (x === undefined) return def;
  if (typeof x !== 'number' || !Number.isInteger(x) || x < min) throw new Error(`handlers.printer.${key}: must be an integer ≥ ${min}.`);
  return x;
}

/** Reads `handlers.printer` (unknown keys are an error that names the key). */
export function parseSettings(o: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): PrinterSettings {
  const known = ['enabled', 'max_document_bytes', 'max_convert_bytes', 'busy_retry_ms', 'connect_timeout_ms', 'raw_close_wait_ms', 'poll_ms', 'cups_server', 'cjk_font'];
  for (const k of Object.keys(o)) if (!known.includes(k)) throw new Error(`handlers.printer: unknown key "${k}".`);
  const envCups = env['CUPS_SERVER'];
  const cups = typeof o['cups_server'] === 'string' ? o['cups_server'] : envCups && !envCups.startsWith('/') ? envCups : 'localhost:631';
  return {
    maxDocumentBytes: int(o, 'max_document_bytes', 50 * MiB, 1),
    maxConvertBytes: int(o, 'max_convert_bytes', 20 * MiB, 1),
    busyRetryMs: int(o, 'busy_retry_ms', 10_000, 0),
    connectTimeoutMs: int(o, 'connect_timeout_ms', 5_000, 100),
    rawCloseWaitMs: int(o, 'raw_close_wait_ms', 2_000, 0),
    pollMs: int(o, 'poll_ms', 500, 20),
    cupsServer: cups,
    ...(typeof o['cjk_font'] === 'string' ? { cjkFont: o['cjk_font'] } : {}),
  };
}

/** A listed printer with what the grants say about it. */
export type ListedPrinter = PrinterInfo & { granted: boolean; alias?: string };

/** Resolves printers and lists them. */
export class Printers {
  readonly cups: CupsServer;
  private readonly timings: BackendTimings;
  constructor(
    readonly settings: PrinterSettings,
    private readonly platform: NodeJS.Platform = process.platform,
    private readonly ps: PsRunner = powershell,
    readonly user: string = safeUser(),
  ) {
    this.timings = { busyRetryMs: settings.busyRetryMs, connectTimeoutMs: settings.connectTimeoutMs };
    this.cups = new CupsServer(settings.cupsServer, this.timings, user);
  }

  /** The backend for a canonical printer id. */
  backendFor(id: string): PrinterBackend {
    if (/^socket:\/\//i.test(id)) return new SocketBackend(id, { ...this.timings, closeWaitMs: this.settings.rawCloseWaitMs });
    if (isUri(id)) return new IppBackend(id.replace(/^http/i, 'ipp'), id, 'ipp', this.timings, this.user);
    if (!id || id === '*') throw new PrinterFault('invalid_arguments', 'Name one printer.', { reason: 'no_printer' });
    return this.platform === 'win32' ? new WindowsBackend(id, this.ps) : this.cups.backend(id);
  }

  /** Local queues (when a spooler answers) and granted network printers, with grant status. */
  async list(grants: readonly PrinterGrant[], signal: AbortSignal, describeUris = true): Promise<{ printers: ListedPrinter[]; spooler: 'cups' | 'windows'; spooler_reachable: boolean }> {
    const spooler = this.platform === 'win32' ? 'windows' : 'cups';
    let local: PrinterInfo[] = [];
    let reachable = true;
    try {
      local = spooler === 'windows' ? await listWindowsPrinters(this.ps, signal) : await this.cups.list(signal);
    } catch (e) {
      if (signal.aborted) throw e;
      reachable = false; // no local spooler is not an error: network printers may still be granted
    }
    const star = grants.some((g) => g.id === '*');
    const out: ListedPrinter[] = local.map((p) => {
      const g = grants.find((x) => x.id === p.id);
      return { ...p, granted: star || !!g, ...(g?.alias ? { alias: g.alias } : {}) };
    });
    // Network printers are asked in parallel: one that does not answer costs its connect timeout once.
    const remote = await Promise.all(
      grants
        .filter((x) => isUri(x.id))
        .map(async (g): Promise<ListedPrinter> => {
          let info: PrinterInfo;
          try {
            info = describeUris ? await this.backendFor(g.id).describe(signal) : { id: g.id, name: g.id, uri: g.id, state: 'unknown', reasons: [], is_default: false, kind: 'ipp' };
          } catch (e) {
            if (signal.aborted) throw e;
            const why = e instanceof PrinterFault ? String(e.details['reason'] ?? e.type) : 'error';
            info = { id: g.id, name: g.id, uri: g.id, state: 'unknown', reasons: [why === 'unreachable' ? 'offline-report' : why], is_default: false, kind: /^socket/i.test(g.id) ? 'socket' : 'ipp' };
          }
          return { ...info, id: g.id, granted: true, ...(g.alias ? { alias: g.alias } : {}) };
        }),
    );
    out.push(...remote);
    return { printers: out, spooler, spooler_reachable: reachable };
  }
}

function safeUser(): string {
  try {
    return os.userInfo().username || 'aios-device';
  } catch {
    return 'aios-device';
  }
}
