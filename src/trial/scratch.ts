/**
 * The scratch share: a folder the run creates and shares read-write through the agent's control API, and
 * removes (grant and folder) at the end. Functions with side effects are only ever called inside it.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { LocalControl } from './local-control.js';
import type { GrantView } from '../control/api.js';

/** A shared scratch folder: `dir` on disk, `root` the share's name in calls. */
export interface Scratch {
  dir: string;
  root: string;
}

/** The folders the device shares (its files grants; the id is the folder's path), as its controls list them. */
export async function sharedFolders(control: LocalControl): Promise<GrantView[]> {
  return (await control.api.listGrants({ kind: 'files' })).grants['files'] ?? [];
}

/**
 * Makes and shares the scratch folder under the agent's temp folder (`<data_dir>/tmp/trial/`). Where the
 * administrator's ceiling for files refuses that, inside a folder already shared read-write (a narrower
 * grant stays inside the ceiling); where neither is allowed, rejects with the agent's message.
 */
export async function shareScratch(control: LocalControl, agentDataDir: string): Promise<Scratch> {
  const root = `aios-trial-${randomUUID().slice(0, 8)}`;
  const tempParent = join(agentDataDir, 'tmp', 'trial');
  const tryIn = async (parent: string): Promise<Scratch> => {
    mkdirSync(parent, { recursive: true, mode: 0o700 });
    const dir = mkdtempSync(join(parent, 'aios-trial-scratch-'));
    try {
      await control.api.addGrant({ kind: 'files', entry: { path: dir, access: 'read_write', name: root } });
    } catch (e) {
      rmSync(dir, { recursive: true, force: true });
      throw e;
    }
    return { dir, root };
  };
  try {
    return await tryIn(tempParent);
  } catch (first) {
    const writable = (await sharedFolders(control)).find((g) => g.access === 'read_write' && existsSync(g.id));
    if (!writable) throw first;
    return await tryIn(writable.id);
  }
}

/** Removes the scratch grant and folder. */
export async function unshareScratch(control: LocalControl, s: Scratch): Promise<void> {
  try {
    await control.api.removeGrant({ kind: 'files', id: s.root });
  } finally {
    rmSync(s.dir, { recursive: true, force: true });
  }
}
