/**
 * Shared folders ("roots") from `grants.files`: each has a name the remote side uses, the path as
 * configured, and its access. Roots under pseudo file systems are never accepted.
 */
import path from 'node:path';
import type { Grants } from '../../src/sdk/index.js';

/** One granted folder. */
export interface Root {
  /** The name arguments use (`{ "root": "Documents" }`). */
  readonly name: string;
  /** Absolute path as configured (not yet resolved: the folder may appear later, e.g. a USB stick). */
  readonly path: string;
  readonly access: 'read' | 'read_write';
}

/** Top-level folders that hold devices and kernel state rather than files. */
export const PSEUDO_FS_PREFIXES: readonly string[] = process.platform === 'win32' ? [] : ['/dev', '/proc', '/sys'];

/** True when `p` (absolute) is or lies under a pseudo file system. */
export function isPseudoFsPath(p: string): boolean {
  return PSEUDO_FS_PREFIXES.some((pre) => p === pre || p.startsWith(pre + '/'));
}

/**
 * Builds roots from grants. A bad grant (relative path, pseudo file system, duplicate name) is a
 * configuration error that names the grant; nothing is silently widened.
 */
export function parseRoots(grants: Grants['files']): Root[] {
  const roots: Root[] = [];
  for (const [i, g] of (grants ?? []).entries()) {
    if (!g || typeof g.path !== 'string' || !path.isAbsolute(g.path)) {
      throw new Error(`grants.files[${i}].path must be an absolute path`);
    }
    if (g.access !== 'read' && g.access !== 'read_write') {
      throw new Error(`grants.files[${i}].access must be read or read_write`);
    }
    const abs = path.resolve(g.path);
    if (isPseudoFsPath(abs)) throw new Error(`grants.files[${i}] names a device or kernel folder, which cannot be shared`);
    const name = g.name ?? (path.basename(abs) || abs);
    if (roots.some((r) => r.name === name)) throw new Error(`grants.files[${i}]: two shared folders are named "${name}"; give one a name`);
    roots.push({ name, path: abs, access: g.access });
  }
  return roots;
}
