/**
 * Windows: printers listed with PowerShell's `Get-Printer`, jobs with `Get-PrintJob` / `Remove-PrintJob`,
 * raw jobs through the spooler API (winspool.drv OpenPrinter/StartDocPrinter/WritePrinter with datatype
 * RAW, called from PowerShell through Add-Type). PDF and images go over IPP to printers granted by URI;
 * a Windows queue name gets `device_unavailable` for them (the spooler has no PDF path without a driver).
 * Names and paths reach PowerShell through environment variables, never spliced into the script.
 */
import { execFile } from 'node:child_process';
import { PrinterFault, type JobInfo, type JobRequest, type PrinterBackend, type PrinterInfo } from './model.js';
import type { JobState } from './ipp/names.js';

/** Runs a PowerShell script with extra environment variables; resolves with its stdout. */
export type PsRunner = (script: string, env: Record<string, string>, signal: AbortSignal) => Promise<string>;

/** The real runner: powershell.exe, no profile, non-interactive. */
export const powershell: PsRunner = (script, env, signal) =>
  new Promise((resolve, reject) => {
    execFile(
      'powershell.exe',
      ['-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-Command', script],
      { env: { ...process.env, ...env }, signal, windowsHide: true, maxBuffer: 8 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) reject(Object.assign(err, { stderr: String(stderr).slice(0, 500) }));
        else resolve(String(stdout));
      },
    );
  });

/** Script: every printer with the fields we report, as JSON. */
export const LIST_SCRIPT =
  "$ErrorActionPreference='Stop'; $d=(Get-CimInstance -ClassName Win32_Printer -Filter 'Default=TRUE' | Select-Object -First 1).Name; " +
  'Get-Printer | ForEach-Object { [pscustomobject]@{ Name=$_.Name; DriverName=$_.DriverName; PortName=$_.PortName; PrinterStatus=[int]$_.PrinterStatus; Location=$_.Location; Shared=$_.Shared; Default=($_.Name -eq $d) } } | ConvertTo-Json -Compress -Depth 3';

/** Script: the jobs of the printer named by $env:AIOS_PRINTER. */
export const JOBS_SCRIPT =
  "$ErrorActionPreference='Stop'; Get-PrintJob -PrinterName $env:AIOS_PRINTER | ForEach-Object { [pscustomobject]@{ Id=$_.Id; DocumentName=$_.DocumentName; JobStatus=[int]$_.JobStatus; PagesPrinted=$_.PagesPrinted; TotalPages=$_.TotalPages; SubmittedTime=$_.SubmittedTime.ToUniversalTime().ToString('o') } } | ConvertTo-Json -Compress -Depth 3";

/** Script: cancel job $env:AIOS_JOB on $env:AIOS_PRINTER. */
export const CANCEL_SCRIPT = "$ErrorActionPreference='Stop'; Remove-PrintJob -PrinterName $env:AIOS_PRINTER -ID ([int]$env:AIOS_JOB)";

/** Script: send the file $env:AIOS_FILE as a RAW job named $env:AIOS_JOBNAME to $env:AIOS_PRINTER; prints the job id. */
export const RAW_SCRIPT = `$ErrorActionPreference='Stop'
Add-Type -TypeDefinition @'
using System; using System.IO; using System.Runtime.InteropServices;
public static class AiosRaw {
  [StructLayout(LayoutKind.Sequential, CharSet=CharSet.Unicode)] public class DOCINFO { public string pDocName; public string pOutputFile; public string pDataType; }
  [DllImport("winspool.drv", CharSet=CharSet.Unicode, SetLastError=true)] static extern bool OpenPrinter(string n, out IntPtr h, IntPtr d);
  [DllImport("winspool.drv", SetLastError=true)] static extern bool ClosePrinter(IntPtr h);
  [DllImport("winspool.drv", CharSet=CharSet.Unicode, SetLastError=true)] static extern int StartDocPrinter(IntPtr h, int level, DOCINFO di);
  [DllImport("winspool.drv", SetLastError=true)] static extern bool EndDocPrinter(IntPtr h);
  [DllImport("winspool.drv", SetLastError=true)] static extern bool WritePrinter(IntPtr h, byte[] b, int n, out int w);
  public static int Send(string printer, string file, string name) {
    IntPtr h; if (!OpenPrinter(printer, out h, IntPtr.Zero)) throw new System.ComponentModel.Win32Exception();
    try {
      int job = StartDocPrinter(h, 1, new DOCINFO { pDocName = name, pDataType = "RAW" });
      if (job == 0) throw new System.ComponentModel.Win32Exception();
      using (var f = File.OpenRead(file)) { var buf = new byte[65536]; int n; while ((n = f.Read(buf, 0, buf.Length)) > 0) { int w; if (!WritePrinter(h, buf, n, out w) || w != n) throw new System.ComponentModel.Win32Exception(); } }
      EndDocPrinter(h); return job;
    } finally { ClosePrinter(h); }
  }
}
'@
[AiosRaw]::Send($env:AIOS_PRINTER, $env:AIOS_FILE, $env:AIOS_JOBNAME)`;

/** Get-Printer's PrinterStatus (MSFT_Printer) → state and reason. */
const PRINTER_STATUS: Readonly<Record<number, [PrinterInfo['state'], string?]>> = {
  0: ['idle'], 1: ['stopped', 'paused'], 2: ['stopped', 'other-error'], 3: ['stopped', 'deleting'], 4: ['stopped', 'media-jam'],
  5: ['stopped', 'media-empty'], 6: ['stopped', 'media-needed'], 7: ['stopped', 'media-jam'], 8: ['stopped', 'offline'],
  9: ['processing'], 10: ['processing'], 11: ['processing'], 12: ['stopped', 'output-area-full'], 13: ['stopped', 'offline'],
  14: ['idle'], 15: ['processing'], 16: ['processing', 'initializing'], 17: ['processing', 'warming-up'], 18: ['idle', 'toner-low'],
  19: ['stopped', 'toner-empty'], 20: ['stopped', 'other-error'], 21: ['stopped', 'user-intervention-required'],
  22: ['stopped', 'out-of-memory'], 23: ['stopped', 'door-open'], 24: ['stopped', 'other-error'], 25: ['idle', 'power-save'],
};

/** JobStatus flags (JOB_STATUS_* of winspool) → an IPP job state and reasons. */
export function jobStateOf(flags: number): { state: JobState; reasons: string[] } {
  const reasons: string[] = [];
  if (flags & 0x40) reasons.push('media-empty');
  if (flags & 0x20) reasons.push('printer-offline');
  if (flags & 0x400) reasons.push('user-intervention-required');
  if (flags & 0x2) reasons.push('job-error');
  if (flags & (0x100 | 0x4)) return { state: 'canceled', reasons };
  if (flags & (0x1000 | 0x80)) return { state: 'completed', reasons };
  if (flags & 0x1) return { state: 'pending-held', reasons };
  if (flags & (0x2 | 0x20 | 0x40 | 0x200 | 0x400)) return { state: 'processing-stopped', reasons };
  if (flags & 0x10) return { state: 'processing', reasons };
  return { state: 'pending', reasons };
}

const asArray = (json: string): Record<string, unknown>[] => {
  const t = json.trim();
  if (!t) return [];
  const v = JSON.parse(t) as unknown;
  return (Array.isArray(v) ? v : [v]).filter((x): x is Record<string, unknown> => typeof x === 'object' && x !== null);
};

/** Parses LIST_SCRIPT's output (ConvertTo-Json gives an object for one printer, an array for several). */
export function parsePrinters(json: string): PrinterInfo[] {
  return asArray(json).map((p) => {
    const status = typeof p['PrinterStatus'] === 'number' ? p['PrinterStatus'] : 0;
    const [state, reason] = PRINTER_STATUS[status] ?? ['unknown'];
    const name = String(p['Name'] ?? '');
    return {
      id: name,
      name,
      ...(typeof p['DriverName'] === 'string' ? { make_and_model: p['DriverName'] } : {}),
      ...(typeof p['Location'] === 'string' && p['Location'] ? { location: p['Location'] } : {}),
      state,
      reasons: reason ? [reason] : [],
      is_default: p['Default'] === true,
      kind: 'windows' as const,
    };
  });
}

/** Parses JOBS_SCRIPT's output. */
export function parseJobs(json: string): JobInfo[] {
  return asArray(json).map((j) => {
    const { state, reasons } = jobStateOf(typeof j['JobStatus'] === 'number' ? j['JobStatus'] : 0);
    return {
      ...(typeof j['Id'] === 'number' ? { job_id: j['Id'] } : {}),
      state,
      reasons,
      ...(typeof j['DocumentName'] === 'string' ? { name: j['DocumentName'] } : {}),
      ...(typeof j['PagesPrinted'] === 'number' ? { pages_completed: j['PagesPrinted'] } : {}),
      ...(typeof j['SubmittedTime'] === 'string' ? { created_at: j['SubmittedTime'] } : {}),
    };
  });
}

function psFault(e: unknown, what: string): PrinterFault {
  if (e instanceof PrinterFault) return e;
  const err = e as NodeJS.ErrnoException & { stderr?: string };
  if (err.name === 'AbortError') throw e;
  if (err.code === 'ENOENT') return new PrinterFault('device_unavailable', 'PowerShell is not available on this device, so Windows printers cannot be used.', { reason: 'not_installed' });
  if (/No MSFT_Printer objects found|not found|1801/i.test(err.stderr ?? '')) return new PrinterFault('device_unavailable', `Windows has no printer by that name (${what}).`, { reason: 'not_found' });
  if (/access is denied|0x5\b/i.test(err.stderr ?? '')) return new PrinterFault('permission_denied', `Windows refused to ${what}; the printer's security settings do not allow this user.`, {});
  return new PrinterFault('execution_failed', `Windows could not ${what}.`, { reason: 'spooler_error' });
}

/** All Windows printers. */
export async function listWindowsPrinters(run: PsRunner, signal: AbortSignal): Promise<PrinterInfo[]> {
  try {
    return parsePrinters(await run(LIST_SCRIPT, {}, signal));
  } catch (e) {
    throw psFault(e, 'list the printers');
  }
}

/** One Windows printer queue. */
export class WindowsBackend implements PrinterBackend {
  readonly kind = 'windows' as const;
  constructor(
    readonly name: string,
    private readonly run: PsRunner = powershell,
  ) {}

  async describe(signal: AbortSignal): Promise<PrinterInfo> {
    const found = (await listWindowsPrinters(this.run, signal)).find((p) => p.name.toLowerCase() === this.name.toLowerCase());
    if (!found) throw new PrinterFault('device_unavailable', `Windows has no printer named "${this.name}".`, { reason: 'not_found' });
    // The spooler takes raw bytes for the driver; documents need the printer's IPP address (see the docs).
    return { ...found, supports: { document_formats: ['application/octet-stream'], media: [], sides: [], color_modes: [], orientations: [] } };
  }

  async submit(job: JobRequest, signal: AbortSignal): Promise<JobInfo> {
    if (!job.raw) {
      throw new PrinterFault('device_unavailable', `Windows printer "${this.name}" takes only raw jobs from this device; grant it by its IPP address (ipp://…) to print ${job.format}.`, { reason: 'no_pdf_path', format: job.format });
    }
    let out: string;
    try {
      out = await this.run(RAW_SCRIPT, { AIOS_PRINTER: this.name, AIOS_FILE: job.file, AIOS_JOBNAME: job.options.job_name ?? 'raw document' }, signal);
    } catch (e) {
      throw psFault(e, `send the job to "${this.name}"`);
    }
    const id = Number.parseInt(out.trim().split(/\s+/).pop() ?? '', 10);
    return { ...(Number.isFinite(id) ? { job_id: id } : {}), state: 'pending', reasons: [] };
  }

  async jobs(_which: 'not-completed' | 'completed' | 'all', limit: number, signal: AbortSignal): Promise<JobInfo[]> {
    try {
      return parseJobs(await this.run(JOBS_SCRIPT, { AIOS_PRINTER: this.name }, signal)).slice(0, limit);
    } catch (e) {
      throw psFault(e, `list the jobs of "${this.name}"`);
    }
  }

  async job(jobId: number, signal: AbortSignal): Promise<JobInfo> {
    const j = (await this.jobs('all', 10_000, signal)).find((x) => x.job_id === jobId);
    // The spooler forgets finished jobs unless "keep printed documents" is on: say what is known, no more.
    if (!j) throw new PrinterFault('invalid_arguments', `Windows has no job ${jobId} on "${this.name}" (finished jobs are removed unless the printer keeps them).`, { reason: 'not_found' });
    return j;
  }

  async cancel(jobId: number, signal: AbortSignal): Promise<JobInfo> {
    try {
      await this.run(CANCEL_SCRIPT, { AIOS_PRINTER: this.name, AIOS_JOB: String(jobId) }, signal);
    } catch (e) {
      throw psFault(e, `cancel job ${jobId}`);
    }
    return { job_id: jobId, state: 'canceled', reasons: [] };
  }
}
