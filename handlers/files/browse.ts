/** Read-only functions that look at names and metadata: files.list_dir, files.stat, files.search. */
import fs from 'node:fs';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import { defineFunction, fail, type CallResource } from '../../src/sdk/index.js';
import { type FilesEnv, descriptor, entryType, pathProps, resourceAhead, resourcesFor, RootArg, schema } from './common.js';
import { compileGlob } from './glob.js';
import { isHiddenName } from './limits.js';
import { mediaTypeOf } from './media-types.js';
import { notFolder, requireDir, resolvePath, type PathArg } from './paths.js';
import { VerifiedDir, withDir } from './handles.js';

const READ_RISK = { read_only: true, destructive: false, idempotent: true, physical: false };

/** A folder function's resources; a file where the folder should be ends the call before anyone is asked. */
async function folderResources(env: FilesEnv, a: PathArg): Promise<CallResource[]> {
  const { resource, resolved } = await resourceAhead(env, 'read', a);
  if (resolved?.stat && !resolved.stat.isDirectory()) notFolder();
  return [resource];
}

const EntrySchema = Type.Object({
  name: Type.String(),
  type: Type.Union([Type.Literal('file'), Type.Literal('directory'), Type.Literal('symlink'), Type.Literal('other')]),
  size: Type.Optional(Type.Integer({ minimum: 0 })),
  modified: Type.Optional(Type.String()),
});

interface Entry {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size?: number;
  modified?: string;
}

async function describeEntry(p: string, name: string): Promise<Entry & { mtimeMs: number }> {
  try {
    const st = await fs.promises.lstat(p);
    const e: Entry & { mtimeMs: number } = { name, type: entryType(st), modified: st.mtime.toISOString(), mtimeMs: st.mtimeMs };
    if (st.isFile()) e.size = st.size;
    return e;
  } catch {
    return { name, type: 'other', mtimeMs: 0 };
  }
}

function encodeCursor(offset: number): string {
  return Buffer.from(JSON.stringify({ o: offset })).toString('base64url');
}

function decodeCursor(c: string | undefined): number {
  if (c === undefined) return 0;
  try {
    const v = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as { o?: unknown };
    if (typeof v.o === 'number' && Number.isInteger(v.o) && v.o >= 0) return v.o;
  } catch {
    /* fall through */
  }
  fail('invalid_arguments', 'The cursor is not one this function returned.', { details: { violations: [{ pointer: '/cursor', message: 'unknown cursor' }] } });
}

const byName = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** files.list_dir */
export function listDir(env: FilesEnv) {
  return defineFunction({
    descriptor: descriptor({
      id: 'files.list_dir',
      name: 'List a shared folder',
      description: 'Lists the entries of a folder inside a folder the user has shared, a page at a time, optionally filtered by a glob on the name and sorted by name, size or modification time. Hidden and system files are left out unless the user allowed them.',
      permission_level: 'low',
      risk: READ_RISK,
      examples: ['List my Documents folder', 'Show the newest PDFs in Downloads'],
      input_schema: schema({
        root: Type.Optional(RootArg),
        path: Type.Optional(pathProps.path),
        glob: Type.Optional(Type.String({ maxLength: 512, description: 'Filter on entry names, e.g. *.pdf' })),
        sort: Type.Optional(Type.Union([Type.Literal('name'), Type.Literal('size'), Type.Literal('modified')])),
        order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        cursor: Type.Optional(Type.String({ maxLength: 256 })),
      }),
      output_schema: schema({
        root: Type.String(),
        path: Type.String(),
        entries: Type.Array(EntrySchema),
        total: Type.Integer({ minimum: 0 }),
        hidden_omitted: Type.Integer({ minimum: 0 }),
        next_cursor: Type.Optional(Type.String()),
      }, ['root', 'path', 'entries', 'total', 'hidden_omitted']),
    }),
    resources: (a) => folderResources(env, { root: a.root, path: a.path ?? '' }),
    async run(a, ctx) {
      const r = await resolvePath(env, { root: a.root, path: a.path ?? '' }, { need: 'read', mustExist: true });
      requireDir(r);
      const offset = decodeCursor(a.cursor);
      const limit = a.limit ?? 100;
      const sort = a.sort ?? 'name';
      const desc = a.order === 'desc';
      const match = a.glob ? compileGlob(a.glob) : null;
      return withDir(r.real, r.rootReal, async (d) => {
        const all = await fs.promises.readdir(d.self(), { withFileTypes: true });
        // As in a recursive copy or delete: the folder is too big to walk (the answer itself is paged).
        if (all.length > env.limits.maxWalkEntries) fail('execution_failed', 'The folder has more entries than the configured limit.', { details: { reason: 'too_many_entries', limit: env.limits.maxWalkEntries } });
        let hidden = 0;
        const names: { name: string }[] = [];
        for (const e of all) {
          if (!env.limits.allowHidden && isHiddenName(e.name)) {
            hidden++;
            continue;
          }
          if (match && !match.test(e.name)) continue;
          names.push({ name: e.name });
        }
        let page: Entry[];
        if (sort === 'name') {
          names.sort(byName);
          if (desc) names.reverse();
          const slice = names.slice(offset, offset + limit);
          page = [];
          for (const n of slice) {
            ctx.signal.throwIfAborted();
            const { mtimeMs: _m, ...e } = await describeEntry(d.child(n.name), n.name);
            page.push(e);
          }
        } else {
          const full: (Entry & { mtimeMs: number })[] = [];
          for (const n of names) {
            ctx.signal.throwIfAborted();
            full.push(await describeEntry(d.child(n.name), n.name));
          }
          const key = (e: Entry & { mtimeMs: number }): number => (sort === 'size' ? e.size ?? -1 : e.mtimeMs);
          full.sort((x, y) => key(x) - key(y) || byName(x, y));
          if (desc) full.reverse();
          page = full.slice(offset, offset + limit).map(({ mtimeMs: _m, ...e }) => e);
        }
        const out: Record<string, unknown> = { root: r.root.name, path: r.rel, entries: page, total: names.length, hidden_omitted: hidden };
        if (offset + limit < names.length) out['next_cursor'] = encodeCursor(offset + limit);
        return out;
      });
    },
  });
}

/** files.stat */
export function statFn(env: FilesEnv) {
  return defineFunction({
    descriptor: descriptor({
      id: 'files.stat',
      name: 'Get file information',
      description: 'Returns type, size and times of a file or folder inside a folder the user has shared, and whether the folder is shared for writing.',
      permission_level: 'low',
      risk: READ_RISK,
      examples: ['How big is report.pdf in Documents?'],
      input_schema: schema(pathProps),
      output_schema: schema({
        root: Type.String(),
        path: Type.String(),
        type: Type.Union([Type.Literal('file'), Type.Literal('directory')]),
        size: Type.Integer({ minimum: 0 }),
        modified: Type.String(),
        created: Type.String(),
        media_type: Type.Optional(Type.String()),
        writable: Type.Boolean(),
      }, ['root', 'path', 'type', 'size', 'modified', 'created', 'writable']),
    }),
    resources: (a) => resourcesFor(env, 'read', a),
    async run(a) {
      const r = await resolvePath(env, a, { need: 'read', mustExist: true });
      const st = r.stat!;
      const out: Record<string, unknown> = {
        root: r.root.name,
        path: r.rel,
        type: st.isDirectory() ? 'directory' : 'file',
        size: st.isDirectory() ? 0 : st.size,
        modified: st.mtime.toISOString(),
        created: st.birthtime.toISOString(),
        writable: r.root.access === 'read_write',
      };
      if (st.isFile()) out['media_type'] = mediaTypeOf(r.name);
      return out;
    },
  });
}

/** files.search */
export function searchFn(env: FilesEnv) {
  return defineFunction({
    descriptor: descriptor({
      id: 'files.search',
      name: 'Find files by name',
      description: 'Finds files or folders whose name (or relative path, when the pattern has a /) matches a glob, below a folder inside a folder the user has shared. Does not follow links; the number of results and the depth are bounded.',
      permission_level: 'low',
      risk: READ_RISK,
      examples: ['Find all spreadsheets in Documents', 'Find invoice*.pdf under Documents/2024'],
      input_schema: schema({
        root: Type.Optional(RootArg),
        path: Type.Optional(pathProps.path),
        pattern: Type.String({ minLength: 1, maxLength: 512, description: 'Glob: *.pdf, report-??.docx, **/notes/*.md' }),
        type: Type.Optional(Type.Union([Type.Literal('file'), Type.Literal('directory'), Type.Literal('any')])),
        max_results: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        max_depth: Type.Optional(Type.Integer({ minimum: 1, maximum: 32 })),
      }, ['pattern']),
      output_schema: schema({
        root: Type.String(),
        matches: Type.Array(Type.Object({ path: Type.String(), type: Type.String(), size: Type.Optional(Type.Integer({ minimum: 0 })), modified: Type.Optional(Type.String()) })),
        truncated: Type.Boolean(),
      }, ['root', 'matches', 'truncated']),
      timeout_ms_default: 60_000,
      timeout_ms_max: 300_000,
    }),
    resources: (a) => folderResources(env, { root: a.root, path: a.path ?? '' }),
    async run(a, ctx) {
      const r = await resolvePath(env, { root: a.root, path: a.path ?? '' }, { need: 'read', mustExist: true });
      requireDir(r);
      const re = compileGlob(a.pattern);
      const onPath = a.pattern.includes('/');
      const want = a.type ?? 'any';
      const maxResults = a.max_results ?? 100;
      const maxDepth = a.max_depth ?? 10;
      const matches: { path: string; type: string; size?: number; modified?: string }[] = [];
      let visited = 0;
      let truncated = false;
      const prefix = r.rel === '' ? '' : `${r.rel}/`;
      // Breadth-first, so shallow matches come first and the depth bound is exact. Each folder is opened
      // and re-checked on its own (a folder swapped for a link mid-walk is skipped, not followed).
      let level: { real: string; rel: string }[] = [{ real: r.real, rel: '' }];
      for (let depth = 1; depth <= maxDepth && level.length > 0 && !truncated; depth++) {
        const next: { real: string; rel: string }[] = [];
        for (const { real, rel } of level) {
          if (truncated) break;
          const dir = await VerifiedDir.open(real, r.rootReal).catch(() => undefined);
          if (!dir) continue;
          try {
            const entries = await fs.promises.readdir(dir.self(), { withFileTypes: true }).catch(() => [] as fs.Dirent[]);
            entries.sort(byName);
            for (const e of entries) {
              ctx.signal.throwIfAborted();
              if (++visited > env.limits.maxWalkEntries) {
                truncated = true;
                break;
              }
              if (!env.limits.allowHidden && isHiddenName(e.name)) continue;
              const childRel = rel === '' ? e.name : `${rel}/${e.name}`;
              const type = entryType(e);
              const okType = want === 'any' ? type === 'file' || type === 'directory' : type === want;
              if (okType && re.test(onPath ? childRel : e.name)) {
                if (matches.length >= maxResults) {
                  truncated = true;
                  break;
                }
                const m: { path: string; type: string; size?: number; modified?: string } = { path: prefix + childRel, type };
                const st = await fs.promises.lstat(dir.child(e.name)).catch(() => undefined);
                if (st) {
                  m.modified = st.mtime.toISOString();
                  if (st.isFile()) m.size = st.size;
                }
                matches.push(m);
              }
              if (type === 'directory' && depth < maxDepth) next.push({ real: path.join(real, e.name), rel: childRel });
            }
          } finally {
            await dir.close();
          }
        }
        level = next;
      }
      return { root: r.root.name, matches, truncated };
    },
  });
}
