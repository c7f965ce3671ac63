/**
 * Real printer peers for the tests (see docs/testing.md): an IPP Everywhere printer (`ippeveprinter`
 * from cups-ipp-utils), a private CUPS scheduler (`cupsd` with its own config, state and port, so no test
 * touches /etc/cups), and an AppSocket listener on loopback. Every peer listens on 127.0.0.1 on a free
 * port and is stopped by its PID.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { until } from '../../../test/helpers/wait.js';
import { freePort } from '../../../test/helpers/net.js';

export { freePort };

/** These peers only offer polling: tests wait on them with the one wait helper. */
export { until };

function exited(p: ChildProcess): Promise<void> {
  return p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise((r) => p.once('exit', () => r()));
}

/** A temp folder readable by CUPS's `lp` user (filters run as lp). */
export function tempDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(d, 0o755);
  return d;
}

/** A running ippeveprinter. */
export interface IppEve {
  uri: string;
  port: number;
  spool: string;
  dir: string;
  proc: ChildProcess;
  log(): string;
  /** Spool files (`<job-id>-<name>.<ext>`) received so far. */
  files(): string[];
  kill(signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

let dbus: { pid: number; address: string } | undefined;

/** ippeveprinter refuses to start without a D-Bus system bus: one private bus for all printers of this process. */
function bus(): string {
  if (dbus) return dbus.address;
  const sock = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'aios-bus-')), 'sysbus');
  const r = spawnSync('dbus-daemon', ['--session', '--fork', `--address=unix:path=${sock}`, '--print-pid'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`dbus-daemon failed: ${r.stderr}`);
  dbus = { pid: Number(r.stdout.trim()), address: `unix:path=${sock}` };
  process.once('exit', () => {
    try {
      process.kill(dbus!.pid);
    } catch {
      /* already gone */
    }
    fs.rmSync(path.dirname(sock), { recursive: true, force: true });
  });
  return dbus.address;
}

/** Starts ippeveprinter; `command` replaces the /bin/true "print" step (e.g. a slow script). */
export async function startIppEve(opts: { formats?: string; command?: string; name?: string } = {}): Promise<IppEve> {
  const dir = tempDir('aios-ippeve-');
  const spool = path.join(dir, 'spool');
  fs.mkdirSync(spool);
  const port = await freePort();
  const name = opts.name ?? 'TestPrinter';
  const logFile = path.join(dir, 'ippeve.log');
  const out = fs.openSync(logFile, 'w');
  const proc = spawn(
    'ippeveprinter',
    ['-k', '-r', 'off', '-c', opts.command ?? '/bin/true', '-d', spool, '-p', String(port), '-n', 'localhost', '-f', opts.formats ?? 'application/pdf,text/plain,image/jpeg,image/png', name],
    { env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: bus() }, stdio: ['ignore', out, out] },
  );
  fs.closeSync(out);
  const uri = `ipp://127.0.0.1:${port}/ipp/print`;
  await until(() => spawnSync('ipptool', ['-q', uri, 'get-printer-attributes.test']).status === 0 || proc.exitCode !== null, 20_000, 'ippeveprinter');
  if (proc.exitCode !== null) throw new Error(`ippeveprinter exited: ${fs.readFileSync(logFile, 'utf8')}`);
  const p: IppEve = {
    uri,
    port,
    spool,
    dir,
    proc,
    log: () => fs.readFileSync(logFile, 'utf8'),
    // The empty .prn next to each document is the output of the -c command, not what the client sent.
    files: () => fs.readdirSync(spool).filter((f) => !(f.endsWith('.prn') && fs.statSync(path.join(spool, f)).size === 0)).sort(),
    async kill(signal = 'SIGKILL') {
      proc.kill(signal);
      await exited(proc);
    },
    async stop() {
      proc.kill('SIGTERM');
      await exited(proc);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return p;
}

/** A private CUPS scheduler. */
export interface Cups {
  hostPort: string;
  dir: string;
  /** Runs a CUPS command-line tool against this scheduler. */
  run(cmd: string, args: string[]): { status: number | null; stdout: string; stderr: string };
  stop(): Promise<void>;
}

/** Starts cupsd -f with its own ServerRoot, spool, logs and port. */
export async function startCups(): Promise<Cups> {
  const dir = tempDir('aios-cups-');
  for (const d of ['spool', 'cache', 'state', 'log', 'ppd']) fs.mkdirSync(path.join(dir, d));
  fs.mkdirSync(path.join(dir, 'tmp'), { mode: 0o1777 });
  fs.chmodSync(path.join(dir, 'tmp'), 0o1777);
  const port = await freePort();
  fs.writeFileSync(
    path.join(dir, 'cupsd.conf'),
    [`Listen 127.0.0.1:${port}`, 'Browsing Off', 'DefaultAuthType None', 'WebInterface No', 'LogLevel warn', '<Location />', '  Order allow,deny', '  Allow all', '</Location>', '<Policy default>', '  <Limit All>', '    Order deny,allow', '  </Limit>', '</Policy>', ''].join('\n'),
  );
  fs.writeFileSync(
    path.join(dir, 'cups-files.conf'),
    [`ServerRoot ${dir}`, `StateDir ${dir}/state`, `CacheDir ${dir}/cache`, `RequestRoot ${dir}/spool`, `TempDir ${dir}/tmp`, `AccessLog ${dir}/log/access_log`, `ErrorLog ${dir}/log/error_log`, `PageLog ${dir}/log/page_log`, ''].join('\n'),
  );
  const proc = spawn('cupsd', ['-f', '-c', path.join(dir, 'cupsd.conf'), '-s', path.join(dir, 'cups-files.conf')], { stdio: 'ignore' });
  const hostPort = `127.0.0.1:${port}`;
  const run = (cmd: string, args: string[]) => {
    const r = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, CUPS_SERVER: hostPort } });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  await until(() => run('lpstat', ['-r']).stdout.includes('is running') || proc.exitCode !== null, 20_000, 'cupsd');
  if (proc.exitCode !== null) throw new Error('cupsd exited at start');
  return {
    hostPort,
    dir,
    run,
    async stop() {
      proc.kill('SIGTERM');
      await exited(proc);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An AppSocket printer: collects what each connection sends. */
export interface SocketPrinter {
  uri: string;
  port: number;
  /** The bytes of each finished connection. */
  received: Buffer[];
  /** Resolves with the next connection's bytes. */
  next(): Promise<Buffer>;
  close(): Promise<void>;
}

/** Starts a listener; `cutAfter` closes each connection after that many bytes (a printer that goes away mid-job). */
export async function startSocketPrinter(opts: { cutAfter?: number } = {}): Promise<SocketPrinter> {
  const received: Buffer[] = [];
  const waiters: ((b: Buffer) => void)[] = [];
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    sockets.add(s);
    const parts: Buffer[] = [];
    let n = 0;
    const done = () => {
      const b = Buffer.concat(parts);
      received.push(b);
      waiters.shift()?.(b);
    };
    s.on('data', (c: Buffer) => {
      parts.push(c);
      n += c.length;
      if (opts.cutAfter !== undefined && n >= opts.cutAfter) {
        s.pause();
        s.resetAndDestroy();
        done();
      }
    });
    s.on('end', () => {
      s.end();
      done();
    });
    s.on('error', () => undefined);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as net.AddressInfo).port;
  return {
    uri: `socket://127.0.0.1:${port}`,
    port,
    received,
    next: () => new Promise((r) => waiters.push(r)),
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        srv.close(() => r());
      }),
  };
}
