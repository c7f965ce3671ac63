/**
 * Per-call temporary files: a private folder (0700) under the data directory, one sub-folder per call,
 * removed when the call's handler settles (however it ends) and swept when the agent starts (what a
 * crash or a handler that never returned left behind).
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { mkdir, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The temp-file part of a call's context. */
export interface CallTemp {
  /** Creates an empty 0600 file (name ends with `ext`, e.g. '.png') and returns its path. */
  tempFile(ext?: string): Promise<string>;
  /** Creates an empty 0700 folder and returns its path. */
  tempDir(): Promise<string>;
}

/** One call's temp folder, created on first use. */
export class CallTempScope implements CallTemp {
  private dir: Promise<string> | undefined;
  private closed = false;

  constructor(private readonly root: string, private readonly label: string) {}

  private folder(): Promise<string> {
    if (this.closed) return Promise.reject(new Error('the call has ended; its temporary folder is gone'));
    this.dir ??= (async () => {
      await mkdir(this.root, { recursive: true, mode: 0o700 });
      const d = join(this.root, `${this.label}-${randomUUID().slice(0, 8)}`);
      await mkdir(d, { mode: 0o700 });
      return d;
    })();
    return this.dir;
  }

  async tempFile(ext = ''): Promise<string> {
    if (!/^(\.[A-Za-z0-9_-]{1,16})*$/.test(ext)) throw new Error(`tempFile: "${ext}" is not a file extension like ".png"`);
    const p = join(await this.folder(), randomUUID() + ext);
    const fh = await open(p, 'wx', 0o600);
    await fh.close();
    return p;
  }

  async tempDir(): Promise<string> {
    const p = join(await this.folder(), randomUUID());
    await mkdir(p, { mode: 0o700 });
    return p;
  }

  /** Removes everything this call created; later tempFile/tempDir calls fail. */
  async close(): Promise<void> {
    this.closed = true;
    const d = this.dir;
    if (!d) return;
    const dir = await d.catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** The private folder all calls' temp folders live in. */
export class TempArea {
  constructor(readonly root: string) {}

  /** Removes what earlier runs left behind and recreates the folder (0700). Call once at start-up. */
  sweep(): void {
    rmSync(this.root, { recursive: true, force: true, maxRetries: 3 });
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
  }

  /** A scope for one call; `label` (e.g. the call id) names its folder, made safe for a file name. */
  scope(label: string): CallTempScope {
    return new CallTempScope(this.root, label.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) || 'call');
  }
}

/**
 * Temp files for a CallContext built by hand (unit tests that call `run` directly): a scope under the
 * OS temp folder, as a plain object so it can be spread into the context. close() removes it.
 */
export function standaloneTemp(label = 'test'): CallTemp & { close(): Promise<void> } {
  const scope = new TempArea(join(tmpdir(), 'aios-device-temp')).scope(label);
  return { tempFile: (ext) => scope.tempFile(ext), tempDir: () => scope.tempDir(), close: () => scope.close() };
}
