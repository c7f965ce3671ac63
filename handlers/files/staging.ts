/**
 * A private folder in the agent's data directory where blob contents wait on their way in or out.
 * Blobs never stream straight between the bridge and a shared folder by path: the handler copies between
 * the staging file and a handle it has verified, so a swapped folder cannot redirect the transfer.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/** Staging files for one handler instance. */
export class Staging {
  constructor(private readonly dir: string) {}

  /** Creates the folder (0700) and removes leftovers of a previous run. */
  async init(): Promise<void> {
    await fs.promises.mkdir(this.dir, { recursive: true, mode: 0o700 });
    for (const n of await fs.promises.readdir(this.dir)) {
      await fs.promises.rm(path.join(this.dir, n), { force: true, recursive: true }).catch(() => {});
    }
  }

  /** Runs `fn` with a fresh staging path that is removed afterwards, whatever happens. */
  async with<T>(fn: (p: string) => Promise<T>): Promise<T> {
    const p = path.join(this.dir, `${randomBytes(12).toString('hex')}.part`);
    try {
      return await fn(p);
    } finally {
      await fs.promises.rm(p, { force: true }).catch(() => {});
    }
  }
}
