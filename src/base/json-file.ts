/**
 * Writing a JSON file so that readers see the old content or the new, never half of it: a temp file
 * beside it (named per process and write, so two writers never share one), then a rename.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { chmod, rename, unlink, writeFile } from 'node:fs/promises';

function tmpName(file: string): string {
  return `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
}

const text = (value: unknown) => JSON.stringify(value, null, 2) + '\n';

/** Writes `value` as pretty JSON to `file` atomically; `mode` (e.g. 0o600) is exact, whatever the umask. */
export async function writeJsonFile(file: string, value: unknown, mode = 0o644): Promise<void> {
  const tmp = tmpName(file);
  try {
    await writeFile(tmp, text(value), { mode });
    await chmod(tmp, mode);
    await rename(tmp, file);
  } catch (e) {
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
}

/** `writeJsonFile`, synchronously (for start-up files written before anything else runs). */
export function writeJsonFileSync(file: string, value: unknown, mode = 0o644): void {
  const tmp = tmpName(file);
  try {
    writeFileSync(tmp, text(value), { mode });
    chmodSync(tmp, mode);
    renameSync(tmp, file);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
    throw e;
  }
}
