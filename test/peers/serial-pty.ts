/**
 * Real serial peers for tests and the bench (see TESTING.md): a socat pseudo-terminal pair, and an
 * instrument played on its far end through serialport's own bindings. Scripts: a scale that answers
 * `W\r\n` with `  12.34 kg\r\n`, a trickler that sends with gaps, a silent device and a flooder.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SerialPort } from 'serialport';

/** A running socat pair: the agent opens `a`, the instrument plays on `b`. */
export interface PtyPair {
  readonly dir: string;
  readonly a: string;
  readonly b: string;
  readonly pid: number;
  /** Kills socat (SIGKILL: the device vanishes without a goodbye) and waits for it to exit. */
  kill(sig?: NodeJS.Signals): Promise<void>;
}

/** util-linux's setpriv (Linux), used to tie socat's life to this process's. */
const SETPRIV = '/usr/bin/setpriv';

/** Starts `socat pty,raw,echo=0,link=A pty,raw,echo=0,link=B` and waits until it relays. */
export async function startPtyPair(dir = mkdtempSync(join(tmpdir(), 'aios-serial-'))): Promise<PtyPair> {
  const a = join(dir, 'ttyA');
  const b = join(dir, 'ttyB');
  // Links left by a killed socat would make the new one fail.
  rmSync(a, { force: true });
  rmSync(b, { force: true });
  const socat = ['socat', '-d', '-d', `pty,raw,echo=0,link=${a}`, `pty,raw,echo=0,link=${b}`];
  // Through `setpriv --pdeathsig` where it exists (util-linux): socat then ends with the test or bench
  // that started it, even one killed outright, instead of relaying on with nobody left to stop it.
  const argv = existsSync(SETPRIV) ? [SETPRIV, '--pdeathsig', 'TERM', '--', ...socat] : socat;
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await new Promise<void>((resolve, reject) => {
    let err = '';
    const onData = (d: Buffer) => {
      err += d.toString();
      // socat -d -d says this once both ptys exist and it relays.
      if (err.includes('starting data transfer loop')) {
        child.stderr?.off('data', onData);
        child.stderr?.resume();
        resolve();
      }
    };
    child.stderr?.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`socat exited (${code}) before relaying: ${err}`)));
  });
  if (!existsSync(a) || !existsSync(b)) throw new Error('socat relays but its links are missing');
  return {
    dir,
    a,
    b,
    pid: child.pid!,
    async kill(sig: NodeJS.Signals = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(sig);
      await exited;
    },
  };
}

/** Where an instrument's script writes its answers. */
export interface Wire {
  send(data: Buffer | string): Promise<void>;
}

/** A script: called with each chunk the instrument receives. */
export type Script = (chunk: Buffer, wire: Wire, received: Buffer) => void;

type BPort = Awaited<ReturnType<typeof SerialPort.binding.open>>;

/** The instrument on the far end of a pair. */
export class Instrument implements Wire {
  /** Everything the instrument received. */
  received = Buffer.alloc(0);
  private closed = false;
  private waiters: { n: number; resolve: () => void }[] = [];
  private sending: Promise<void> = Promise.resolve();

  private constructor(
    private readonly port: BPort,
    private readonly script: Script,
  ) {
    void this.loop();
  }

  /** Opens `path` and plays `script` on it. */
  static async open(path: string, script: Script): Promise<Instrument> {
    const port = await SerialPort.binding.open({ path, baudRate: 9600, lock: false });
    return new Instrument(port, script);
  }

  /** Sends bytes in order (writes are queued). */
  send(data: Buffer | string): Promise<void> {
    const b = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
    this.sending = this.sending.then(() => (this.closed ? undefined : this.port.write(b))).catch(() => undefined);
    return this.sending;
  }

  /** Resolves once the instrument has received at least `n` bytes in all. */
  receivedAtLeast(n: number): Promise<void> {
    if (this.received.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.port.close().catch(() => undefined);
  }

  private async loop(): Promise<void> {
    const buf = Buffer.alloc(65536);
    while (!this.closed) {
      let n: number;
      try {
        n = (await this.port.read(buf, 0, buf.length)).bytesRead;
      } catch {
        return;
      }
      const chunk = Buffer.from(buf.subarray(0, n));
      this.received = Buffer.concat([this.received, chunk]);
      this.waiters = this.waiters.filter((w) => (this.received.length >= w.n ? (w.resolve(), false) : true));
      this.script(chunk, this, this.received);
    }
  }
}

/** Calls `onLine` for each complete `\r\n`-terminated command received. */
export function lineScript(onLine: (line: string, wire: Wire) => void): Script {
  let pending = '';
  return (chunk, wire) => {
    pending += chunk.toString('latin1');
    let i;
    while ((i = pending.indexOf('\r\n')) >= 0) {
      const line = pending.slice(0, i);
      pending = pending.slice(i + 2);
      onLine(line, wire);
    }
  };
}

/** The scale: `W` answers the weight; other commands are ignored. */
export const scale = (weight = '  12.34 kg'): Script => lineScript((line, w) => (line === 'W' ? void w.send(`${weight}\r\n`) : undefined));

/** Never answers. */
export const silent: Script = () => {};

/** Sends `parts` with `gapMs` between them when it gets `T\r\n`. */
export const trickler = (parts: (string | Buffer)[], gapMs: number): Script =>
  lineScript((line, w) => {
    if (line !== 'T') return;
    void (async () => {
      for (const [i, p] of parts.entries()) {
        if (i) await new Promise((r) => setTimeout(r, gapMs));
        await w.send(p);
      }
    })();
  });

/** On `F\r\n`, sends a repeating pattern nonstop until `stop()`. */
export function flooder(chunk = Buffer.alloc(4096, 0x46)): Script & { stop(): void } {
  let on = false;
  const s = lineScript((line, w) => {
    if (line !== 'F' || on) return;
    on = true;
    void (async () => {
      while (on) await w.send(chunk);
    })();
  }) as Script & { stop(): void };
  s.stop = () => {
    on = false;
  };
  return s;
}
