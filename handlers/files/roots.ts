/**
 * Shared folders ("roots") from the live `files` grants: each has a name the remote side uses (the
 * grant's alias), its absolute path and its access. Roots under pseudo file systems are refused when the
 * grant is read (grants.ts), so they never get here.
 */
import type { Grant } from '../../src/sdk/index.js';

/** One granted folder. */
export interface Root {
  /** The name arguments use (`{ "root": "Documents" }`). */
  readonly name: string;
  /** Absolute path as configured (not yet resolved: the folder may appear later, e.g. a USB stick). */
  readonly path: string;
  readonly access: 'read' | 'read_write';
  /** `always`: every call in this folder asks. */
  readonly ask?: 'always' | undefined;
}

/** Top-level folders that hold devices and kernel state rather than files. */
export const PSEUDO_FS_PREFIXES: readonly string[] = process.platform === 'win32' ? [] : ['/dev', '/proc', '/sys'];

/** True when `p` (absolute) is or lies under a pseudo file system. */
export function isPseudoFsPath(p: string): boolean {
  return PSEUDO_FS_PREFIXES.some((pre) => p === pre || p.startsWith(pre + '/'));
}

/** The roots of the current `files` grants (normalised by the grant kind: absolute, named, checked). */
export function rootsOf(grants: readonly Grant[]): Root[] {
  return grants.map((g) => ({ name: g.alias ?? g.id, path: g.id, access: g.access === 'read' ? 'read' : 'read_write', ask: g.ask }));
}
