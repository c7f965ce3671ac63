/**
 * Functions that return file contents: files.read_text and files.read_bytes. Contents are never logged.
 * Large binary reads leave as blobs (PROTOCOL.md §9) through a staging copy of the verified handle.
 */
import fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { Type } from '@sinclair/typebox';
import { BlobRefSchema, defineFunction, fail, type CallContext, type CallResource } from '../../src/sdk/index.js';
import { type FilesEnv, descriptor, pathProps, resourceAhead, schema } from './common.js';
import { openFileForRead } from './handles.js';
import { copyHandle, readAt } from './io.js';
import { mediaTypeOf } from './media-types.js';
import { checkHardlinks, isFolder, requireFile, resolvePath, type Resolved } from './paths.js';

const READ_RISK = { read_only: true, destructive: false, idempotent: true, physical: false };
const CHUNK = 1024 * 1024;

async function openForRead(env: FilesEnv, a: { root?: string; path: string }): Promise<{ r: Resolved; fh: FileHandle; stat: fs.Stats }> {
  const r = await resolvePath(env, a, { need: 'read', mustExist: true });
  requireFile(r);
  const { fh, stat } = await openFileForRead(r.real, r.rootReal);
  try {
    checkHardlinks(env, stat);
  } catch (e) {
    await fh.close();
    throw e;
  }
  return { r, fh, stat };
}

/** A read's resources; a folder where the file should be, or a hard-linked file, ends the call before anyone is asked. */
async function readResources(env: FilesEnv, a: { root?: string; path: string }): Promise<CallResource[]> {
  const { resource, resolved } = await resourceAhead(env, 'read', a);
  if (resolved?.stat?.isDirectory()) isFolder();
  if (resolved?.stat) checkHardlinks(env, resolved.stat);
  return [resource];
}

function tooLarge(what: string, size: number, limit: number): never {
  fail('payload_too_large', `${what} is larger than the configured limit.`, { details: { size, limit } });
}

const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function decodeUtf8(buf: Buffer): string {
  try {
    return decoder.decode(buf);
  } catch {
    fail('execution_failed', 'The file is not valid UTF-8 text.', { details: { reason: 'not_utf8' } });
  }
}

/** Moves a byte range's edges onto UTF-8 character boundaries. */
function snapToChars(buf: Buffer, atStart: boolean, atEof: boolean): { buf: Buffer; skippedHead: number } {
  let head = 0;
  if (!atStart) while (head < 3 && head < buf.length && (buf[head]! & 0xc0) === 0x80) head++;
  let end = buf.length;
  if (!atEof) {
    // Drop a trailing incomplete sequence.
    let i = end - 1;
    let back = 0;
    while (i >= head && back < 3 && (buf[i]! & 0xc0) === 0x80) {
      i--;
      back++;
    }
    if (i >= head) {
      const lead = buf[i]!;
      const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
      if (end - i < need) end = i;
    }
  }
  return { buf: buf.subarray(head, end), skippedHead: head };
}

/** Collects whole lines [startLine, startLine+count) without reading more than the cap into memory. */
async function readLines(fh: FileHandle, startLine: number, count: number | undefined, cap: number, signal: AbortSignal): Promise<{ buf: Buffer; offset: number; lines: number; eof: boolean }> {
  const chunk = Buffer.allocUnsafe(CHUNK);
  const parts: Buffer[] = [];
  let kept = 0;
  let line = 1;
  let pos = 0;
  let offset = -1;
  let lines = 0;
  for (;;) {
    signal.throwIfAborted();
    const { bytesRead } = await fh.read(chunk, 0, CHUNK, pos);
    if (bytesRead === 0) break;
    let from = 0;
    for (let i = 0; i < bytesRead; i++) {
      if (chunk[i] !== 0x0a) continue;
      if (line >= startLine) {
        const piece = chunk.subarray(from, i + 1);
        if (offset < 0) offset = pos + from;
        kept += piece.length;
        if (kept > cap) tooLarge('The requested lines are', kept, cap);
        parts.push(Buffer.from(piece));
        lines++;
        if (count !== undefined && lines >= count) return { buf: Buffer.concat(parts), offset, lines, eof: false };
      }
      line++;
      from = i + 1;
    }
    if (line >= startLine && from < bytesRead) {
      if (offset < 0) offset = pos + from;
      kept += bytesRead - from;
      if (kept > cap) tooLarge('The requested lines are', kept, cap);
      parts.push(Buffer.from(chunk.subarray(from, bytesRead)));
    }
    pos += bytesRead;
  }
  // A last line without a newline counts as a line.
  const tail = parts.length > 0 && parts[parts.length - 1]!.at(-1) !== 0x0a;
  return { buf: Buffer.concat(parts), offset: Math.max(offset, 0), lines: lines + (tail ? 1 : 0), eof: true };
}

/** files.read_text */
export function readText(env: FilesEnv) {
  return defineFunction({
    descriptor: descriptor({
      id: 'files.read_text',
      name: 'Read a text file',
      description: `Reads a UTF-8 text file inside a folder the user has shared, whole or as a byte range (offset, length) or a line range (start_line, line_count). At most ${env.limits.maxTextBytes} bytes per call; larger files fail with payload_too_large and can be read in ranges.`,
      permission_level: 'medium',
      risk: READ_RISK,
      examples: ['Read notes.txt from my Documents', 'Show lines 100 to 150 of server.log'],
      input_schema: schema({
        ...pathProps,
        offset: Type.Optional(Type.Integer({ minimum: 0 })),
        length: Type.Optional(Type.Integer({ minimum: 0 })),
        start_line: Type.Optional(Type.Integer({ minimum: 1 })),
        line_count: Type.Optional(Type.Integer({ minimum: 1 })),
      }, ['path']),
      output_schema: schema({
        root: Type.String(),
        path: Type.String(),
        text: Type.String(),
        size: Type.Integer({ minimum: 0 }),
        offset: Type.Integer({ minimum: 0 }),
        length: Type.Integer({ minimum: 0 }),
        lines: Type.Optional(Type.Integer({ minimum: 0 })),
        eof: Type.Boolean(),
        media_type: Type.String(),
      }, ['root', 'path', 'text', 'size', 'offset', 'length', 'eof', 'media_type']),
    }),
    resources: (a) => readResources(env, a),
    async run(a, ctx) {
      const byBytes = a.offset !== undefined || a.length !== undefined;
      const byLines = a.start_line !== undefined || a.line_count !== undefined;
      if (byBytes && byLines) fail('invalid_arguments', 'Give a byte range or a line range, not both.', { details: { violations: [{ pointer: '/start_line', message: 'conflicts with offset/length' }] } });
      const { r, fh, stat } = await openForRead(env, a);
      try {
        const cap = env.limits.maxTextBytes;
        const base = { root: r.root.name, path: r.rel, size: stat.size, media_type: mediaTypeOf(r.name) };
        if (byLines) {
          const got = await readLines(fh, a.start_line ?? 1, a.line_count, cap, ctx.signal);
          const text = decodeUtf8(got.buf);
          return { ...base, text, offset: got.offset, length: got.buf.length, lines: got.lines, eof: got.eof };
        }
        const start = Math.min(a.offset ?? 0, stat.size);
        const len = Math.min(a.length ?? stat.size - start, stat.size - start);
        if (len > cap) tooLarge(byBytes ? 'The requested range is' : 'The file is', len, cap);
        const raw = await readAt(fh, start, len);
        const atEof = start + raw.length >= stat.size;
        const snapped = snapToChars(raw, start === 0, atEof);
        let text = decodeUtf8(snapped.buf);
        if (start === 0 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        return { ...base, text, offset: start + snapped.skippedHead, length: snapped.buf.length, eof: atEof && snapped.buf.length + snapped.skippedHead === raw.length };
      } finally {
        await fh.close();
      }
    },
  });
}

/** Copies a range of a verified handle to a staging file and uploads it as a blob. */
async function uploadRange(env: FilesEnv, fh: FileHandle, start: number, len: number, mediaType: string, ctx: CallContext) {
  return env.staging.with(async (p) => {
    const out = await fs.promises.open(p, 'wx', 0o600);
    try {
      await copyHandle(fh, out, {
        start,
        length: len,
        signal: ctx.signal,
        onChunk: (done) => ctx.progress({ progress: done, total: len * 2, message: 'Preparing' }),
      });
    } finally {
      await out.close();
    }
    ctx.progress({ progress: len, total: len * 2, message: 'Uploading' });
    return ctx.blobs.uploadFile(p, mediaType, ctx.signal);
  });
}

/** files.read_bytes */
export function readBytes(env: FilesEnv) {
  return defineFunction({
    descriptor: descriptor({
      id: 'files.read_bytes',
      name: 'Read a file',
      description: `Reads any file (or a byte range of it) inside a folder the user has shared. Up to ${env.limits.inlineMaxBytes} bytes come back inline as base64 (encoding: "base64", data); larger contents, or any when as_blob is true, come back as a blob reference to fetch from the bridge.`,
      permission_level: 'medium',
      risk: READ_RISK,
      examples: ['Send me photo.jpg from Pictures', 'Fetch the first 1 KB of data.bin'],
      input_schema: schema({
        ...pathProps,
        offset: Type.Optional(Type.Integer({ minimum: 0 })),
        length: Type.Optional(Type.Integer({ minimum: 0 })),
        as_blob: Type.Optional(Type.Boolean()),
      }, ['path']),
      output_schema: schema({
        root: Type.String(),
        path: Type.String(),
        size: Type.Integer({ minimum: 0 }),
        offset: Type.Integer({ minimum: 0 }),
        length: Type.Integer({ minimum: 0 }),
        media_type: Type.String(),
        encoding: Type.Optional(Type.Literal('base64')),
        data: Type.Optional(Type.String()),
        blob: Type.Optional(BlobRefSchema),
      }, ['root', 'path', 'size', 'offset', 'length', 'media_type']),
      timeout_ms_default: 120_000,
      timeout_ms_max: 3_600_000,
    }),
    resources: (a) => readResources(env, a),
    async run(a, ctx) {
      const { r, fh, stat } = await openForRead(env, a);
      try {
        const start = Math.min(a.offset ?? 0, stat.size);
        const len = Math.min(a.length ?? stat.size - start, stat.size - start);
        if (len > env.limits.maxReadBytes) tooLarge(a.length !== undefined ? 'The requested range is' : 'The file is', len, env.limits.maxReadBytes);
        const mediaType = mediaTypeOf(r.name);
        const base = { root: r.root.name, path: r.rel, size: stat.size, offset: start, length: len, media_type: mediaType };
        if (len <= env.limits.inlineMaxBytes && !a.as_blob) {
          const buf = await readAt(fh, start, len);
          return { ...base, length: buf.length, encoding: 'base64', data: buf.toString('base64') };
        }
        const blob = await uploadRange(env, fh, start, len, mediaType, ctx);
        return { ...base, blob };
      } finally {
        await fh.close();
      }
    },
  });
}
