/**
 * Functions that write file contents: files.write_text and files.write_bytes (inline base64 or a blob).
 * Every write is atomic (atomic-write.ts), refuses to replace a file unless `mode` says so, and refuses
 * denied extensions.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import { Type } from '@sinclair/typebox';
import { BlobRefSchema, defineFunction, fail, type BlobRef, type CallContext, type CallResource, type Message } from '../../src/sdk/index.js';
import { alreadyExists, atomicWrite, type WriteMode } from './atomic-write.js';
import { type FilesEnv, descriptor, pathProps, resourceAhead, schema } from './common.js';
import { askedMsg, msg, sizeMsg, whereMsg } from './describe.js';
import { openFileForRead, withDir } from './handles.js';
import { copyHandle, writeAll } from './io.js';
import { checkWritableName } from './limits.js';
import { checkHardlinks, isFolder, resolvePath, type Resolved } from './paths.js';

const WRITE_RISK = { read_only: false, destructive: true, idempotent: false, physical: false };
const ModeSchema = Type.Optional(Type.Union([Type.Literal('create'), Type.Literal('overwrite'), Type.Literal('append')], {
  description: 'create (default): fail if the file exists; overwrite: replace it; append: add to its end.',
}));
const WriteOutput = schema({
  root: Type.String(),
  path: Type.String(),
  size: Type.Integer({ minimum: 0 }),
  created: Type.Boolean(),
  mode: Type.String(),
}, ['root', 'path', 'size', 'created', 'mode']);

/** Where the new bytes come from. */
type Source = { kind: 'buffer'; data: Buffer } | { kind: 'blob'; ref: BlobRef };

function sourceSize(s: Source): number {
  return s.kind === 'buffer' ? s.data.length : s.ref.size;
}

/** Resolves and checks a write target (shared by run and describe). */
async function target(env: FilesEnv, a: { root?: string; path: string; mode?: WriteMode }): Promise<Resolved> {
  const r = await resolvePath(env, a, { need: 'write', mustExist: false });
  checkTarget(env, a, r);
  return r;
}

/**
 * What a write's target must be, as far as the disk shows it (`r` undefined: its folder does not
 * exist yet): a name that may be written, not a folder (`is_folder`), not an existing file in `create`
 * mode (`exists`). Run before consent by `resources()` and again by `run()` (the file may appear meanwhile).
 */
function checkTarget(env: FilesEnv, a: { path: string; mode?: WriteMode }, r: Resolved | undefined): void {
  checkWritableName(path.posix.basename(a.path), env.limits);
  if (!r) return;
  if (r.stat?.isDirectory()) isFolder();
  checkWritableName(r.name, env.limits);
  if (r.stat && (a.mode ?? 'create') === 'create') alreadyExists();
}

/** A write's resources; a call bound to fail (see `checkTarget`, and a hard-linked file) ends before anyone is asked. */
async function writeResources(env: FilesEnv, a: { root?: string; path: string; mode?: WriteMode }): Promise<CallResource[]> {
  const { resource, resolved } = await resourceAhead(env, 'write', a);
  checkTarget(env, a, resolved);
  if (resolved?.stat) checkHardlinks(env, resolved.stat);
  return [resource];
}

async function writeFile(env: FilesEnv, a: { root?: string; path: string; mode?: WriteMode }, source: Source, ctx: CallContext) {
  const mode = a.mode ?? 'create';
  const r = await target(env, a);
  const newBytes = sourceSize(source);
  const total = newBytes + (mode === 'append' && r.stat ? r.stat.size : 0);
  if (total > env.limits.maxWriteBytes) {
    fail('payload_too_large', 'The file would be larger than the configured write limit.', { details: { size: total, limit: env.limits.maxWriteBytes } });
  }
  let existing: { fh: FileHandle; stat: fs.Stats } | undefined;
  if (r.stat) {
    existing = await openFileForRead(r.real, r.rootReal);
    try {
      checkHardlinks(env, existing.stat);
    } catch (e) {
      await existing.fh.close();
      throw e;
    }
  }
  try {
    const copyOld = (src: FileHandle, dst: FileHandle) => copyHandle(src, dst, { signal: ctx.signal });
    const write = (fill: (fh: FileHandle, offset: number) => Promise<number>) =>
      withDir(r.parentReal, r.rootReal, (dir) => atomicWrite({ dir, name: r.name, mode, ctx, existing, fill, copyOld }));
    let result: { size: number; created: boolean };
    if (source.kind === 'buffer') {
      result = await write(async (fh, offset) => {
        await writeAll(fh, source.data, offset);
        return source.data.length;
      });
    } else {
      result = await env.staging.with(async (staged) => {
        ctx.progress({ progress: 0, total: newBytes * 2, message: 'Downloading' });
        await ctx.blobs.downloadToFile(source.ref, staged, ctx.signal);
        const src = await fs.promises.open(staged, 'r');
        try {
          return await write((fh, offset) =>
            copyHandle(src, fh, { dstStart: offset, signal: ctx.signal, onChunk: (d) => ctx.progress({ progress: newBytes + d, total: newBytes * 2, message: 'Writing' }) }),
          );
        } finally {
          await src.close();
        }
      });
    }
    return { root: r.root.name, path: r.rel, size: result.size, created: result.created, mode };
  } finally {
    await existing?.fh.close().catch(() => {});
  }
}

/** The confirmation sentence for a write. */
async function describeWrite(env: FilesEnv, a: { root?: string; path: string; mode?: WriteMode }, size: number): Promise<Message> {
  const mode = a.mode ?? 'create';
  try {
    const r = await target(env, a);
    if (mode === 'append' && r.stat) return msg('files.write.append', { size: sizeMsg(size), target: whereMsg(r) });
    if (r.stat && mode === 'overwrite') return msg('files.write.overwrite', { target: whereMsg(r), old: sizeMsg(r.stat.size), new: sizeMsg(size) });
    return msg('files.write.create', { target: whereMsg(r), size: sizeMsg(size) });
  } catch {
    // The call will be refused when it runs; the prompt still says what was asked.
    return msg('files.write.unresolved', { size: sizeMsg(size), target: askedMsg(a) });
  }
}

/** files.write_text */
export function writeText(env: FilesEnv) {
  return defineFunction({
    descriptor: descriptor({
      id: 'files.write_text',
      name: 'Write a text file',
      description: 'Writes UTF-8 text to a file inside a folder the user has shared for writing. Creates the file, or with mode "overwrite" replaces it, or with "append" adds to its end. The write is atomic: readers see the old file or the new one, never a mix. Executables, scripts and shortcuts are refused.',
      permission_level: 'high',
      risk: WRITE_RISK,
      examples: ['Save these notes as notes.txt in Documents'],
      input_schema: schema({ ...pathProps, text: Type.String({ maxLength: 768 * 1024 }), mode: ModeSchema }, ['path', 'text']),
      output_schema: WriteOutput,
    }),
    resources: (a) => writeResources(env, a),
    describe: (a) => describeWrite(env, a, Buffer.byteLength(a.text, 'utf8')),
    run: (a, ctx) => writeFile(env, a, { kind: 'buffer', data: Buffer.from(a.text, 'utf8') }, ctx),
  });
}

/** files.write_bytes */
export function writeBytes(env: FilesEnv) {
  const inlineChars = Math.ceil(env.limits.inlineMaxBytes / 3) * 4;
  return defineFunction({
    descriptor: descriptor({
      id: 'files.write_bytes',
      name: 'Write a file',
      description: `Writes binary content to a file inside a folder the user has shared for writing: inline base64 (data, up to ${env.limits.inlineMaxBytes} bytes) or a blob reference uploaded to the bridge first (blob; size and SHA-256 are checked). Modes and atomicity as files.write_text.`,
      permission_level: 'high',
      risk: WRITE_RISK,
      examples: ['Save this photo as Pictures/cat.jpg'],
      input_schema: {
        ...schema({
          ...pathProps,
          encoding: Type.Optional(Type.Literal('base64')),
          data: Type.Optional(Type.String({ maxLength: inlineChars, pattern: '^[A-Za-z0-9+/]*={0,2}$' })),
          blob: Type.Optional(BlobRefSchema),
          mode: ModeSchema,
        }, ['path']),
        // Exactly one source: refused by validation, before anyone is asked to confirm the write.
        oneOf: [{ required: ['data'] }, { required: ['blob'] }],
      },
      output_schema: WriteOutput,
      timeout_ms_default: 120_000,
      timeout_ms_max: 3_600_000,
    }),
    resources: (a) => writeResources(env, a),
    describe: (a) => describeWrite(env, a, a.blob ? a.blob.size : Buffer.byteLength(a.data ?? '', 'base64')),
    run(a, ctx) {
      // The input schema's oneOf has made sure there is exactly one of data and blob.
      const source: Source = a.blob ? { kind: 'blob', ref: a.blob } : { kind: 'buffer', data: Buffer.from(a.data!, 'base64') };
      return writeFile(env, a, source, ctx);
    },
  });
}
