/**
 * Chunked copying between open handles, with a fixed buffer so memory stays flat for any file size,
 * and the call's abort signal checked between chunks.
 */
import type { FileHandle } from 'node:fs/promises';

const CHUNK = 1024 * 1024;

/** Copies `length` bytes (or to end of file when undefined) from `src` at `start` to the end of what was written to `dst`. */
export async function copyHandle(
  src: FileHandle,
  dst: FileHandle,
  opts: { start?: number; length?: number; dstStart?: number; signal: AbortSignal; onChunk?: (done: number) => void },
): Promise<number> {
  const buf = Buffer.allocUnsafe(CHUNK);
  let pos = opts.start ?? 0;
  let out = opts.dstStart ?? 0;
  let left = opts.length ?? Infinity;
  let done = 0;
  while (left > 0) {
    opts.signal.throwIfAborted();
    const want = Math.min(CHUNK, left);
    const { bytesRead } = await src.read(buf, 0, want, pos);
    if (bytesRead === 0) break;
    let off = 0;
    while (off < bytesRead) {
      const { bytesWritten } = await dst.write(buf, off, bytesRead - off, out);
      off += bytesWritten;
      out += bytesWritten;
    }
    pos += bytesRead;
    left -= bytesRead;
    done += bytesRead;
    opts.onChunk?.(done);
  }
  return done;
}

/** Writes a whole buffer at `position`. */
export async function writeAll(dst: FileHandle, data: Buffer, position: number): Promise<void> {
  let off = 0;
  while (off < data.length) {
    const { bytesWritten } = await dst.write(data, off, data.length - off, position + off);
    off += bytesWritten;
  }
}

/** Reads up to `length` bytes at `position` into a new buffer (for small, capped reads only). */
export async function readAt(src: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await src.read(buf, got, length - got, position + got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}
