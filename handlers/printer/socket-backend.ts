/**
 * AppSocket / JetDirect (`socket://host:9100`): the document's bytes go down a TCP connection untouched
 * and the printer says nothing back. So the only truthful state after a job is `sent` (every byte left
 * this machine and the printer closed or kept the connection cleanly); there are no job ids, no job list
 * and no cancel once sent.
 */
import fs from 'node:fs';
import net from 'node:net';
import { transportFault } from './ipp/client.js';
import { PrinterFault, type BackendTimings, type JobInfo, type JobRequest, type PrinterBackend, type PrinterInfo } from './model.js';

/** Host and port of a socket:// URI (port 9100 unless given). */
export function socketAddress(uri: string): { host: string; port: number } {
  const u = new URL(uri);
  if (u.protocol !== 'socket:') throw new PrinterFault('invalid_arguments', 'An AppSocket printer is written socket://host:port.', { reason: 'bad_uri' });
  return { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port: u.port ? Number(u.port) : 9100 };
}

const noJobs = () => new PrinterFault('invalid_arguments', 'AppSocket printers (socket://) report no jobs: a job sent to one has state "sent" and nothing more is known.', { reason: 'no_job_status' });

/** One AppSocket printer. */
export class SocketBackend implements PrinterBackend {
  readonly kind = 'socket' as const;
  private readonly addr: { host: string; port: number };
  constructor(
    readonly uri: string,
    private readonly timings: BackendTimings & { closeWaitMs: number },
  ) {
    this.addr = socketAddress(uri);
  }

  async describe(): Promise<PrinterInfo> {
    // No status channel: connecting would start a job on some printers, so it is not probed.
    return { id: this.uri, name: this.uri, uri: this.uri, state: 'unknown', reasons: [], is_default: false, kind: 'socket', supports: { document_formats: ['application/octet-stream'], media: [], sides: [], color_modes: [], orientations: [] } };
  }

  submit(job: JobRequest, signal: AbortSignal, onBytes?: (sent: number) => void): Promise<JobInfo> {
    signal.throwIfAborted();
    const target = `${this.addr.host}:${this.addr.port}`;
    return new Promise<JobInfo>((resolve, reject) => {
      let sent = 0;
      let settled = false;
      let connected = false;
      let closeTimer: NodeJS.Timeout | undefined;
      const sock = net.connect({ host: this.addr.host, port: this.addr.port });
      const file = fs.createReadStream(job.file, { highWaterMark: 64 * 1024 });
      const connectTimer = setTimeout(() => finish(transportFault(Object.assign(new Error('connect timeout'), { code: 'ETIMEDOUT' }), target, 0)), this.timings.connectTimeoutMs);
      const finish = (err?: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(connectTimer);
        clearTimeout(closeTimer);
        signal.removeEventListener('abort', onAbort);
        file.destroy();
        sock.destroy();
        if (err) reject(err);
        else resolve({ state: 'sent', reasons: [] });
      };
      const onAbort = () => finish(signal.reason ?? new Error('aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
      sock.on('connect', () => {
        connected = true;
        clearTimeout(connectTimer);
        file.pipe(sock);
      });
      file.on('data', (c) => {
        sent += c.length;
        onBytes?.(sent);
      });
      file.on('error', (e) => finish(e));
      // Back-channel data (status bytes some printers send) is read and dropped.
      sock.on('data', () => undefined);
      sock.on('error', (e: NodeJS.ErrnoException) => finish(transportFault(e, target, connected ? Math.max(sent, 1) : 0)));
      sock.on('finish', () => {
        // Every byte is with the kernel and our side is shut: wait for the printer to close (it has read
        // everything) or, if it keeps the connection, give it a moment to reset it before calling it sent.
        closeTimer = setTimeout(() => finish(), this.timings.closeWaitMs);
      });
      sock.on('close', (hadError) => {
        if (hadError) return; // 'error' already reported it
        if (sock.writableFinished) finish();
        else finish(transportFault(Object.assign(new Error('closed'), { code: 'ECONNRESET' }), target, Math.max(sent, 1)));
      });
    });
  }

  async job(): Promise<JobInfo> {
    throw noJobs();
  }
  async jobs(): Promise<JobInfo[]> {
    throw noJobs();
  }
  async cancel(): Promise<JobInfo> {
    throw new PrinterFault('invalid_arguments', 'A job sent to an AppSocket printer (socket://) cannot be cancelled: the printer already has its bytes.', { reason: 'no_job_status' });
  }
}
