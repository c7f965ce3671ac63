/**
 * Whether a call's resource is among what the user shared with the agent (config `grants`). Resources
 * are named `kind:value` by handlers (`files:/srv/out/a.txt`, `serial:/dev/ttyUSB0`, `printer:Office`,
 * `camera:*`, `bluetooth:AA:BB:…`); a bare absolute path means a file.
 */
import path from 'node:path';
import type { Grants } from '../sdk/index.js';

const KINDS: Record<string, keyof Grants> = {
  file: 'files', files: 'files', folder: 'files',
  serial: 'serial',
  printer: 'printers', printers: 'printers',
  camera: 'cameras', cameras: 'cameras',
  bluetooth: 'bluetooth', ble: 'bluetooth',
};

function under(root: string, p: string): boolean {
  const rel = path.relative(path.resolve(root), path.resolve(p));
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** Builds `(resource, writes) => granted` over the configured grants. */
export function grantMatcher(grants: Grants): (resource: string, writes: boolean) => boolean {
  return (resource, writes) => {
    if (!resource || resource === '*') return false;
    const m = /^([a-z]+):(.*)$/.exec(resource);
    const kind = m ? KINDS[m[1] ?? ''] : path.isAbsolute(resource) ? 'files' : undefined;
    const value = m ? (m[2] ?? '') : resource;
    if (!kind) return false;
    if (kind === 'files') {
      if (!path.isAbsolute(value)) return false;
      return (grants.files ?? []).some((g) => under(g.path, value) && (!writes || g.access === 'read_write'));
    }
    const list = grants[kind] ?? [];
    return list.includes('*') || list.includes(value);
  };
}
