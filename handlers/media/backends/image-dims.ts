/**
 * Width and height of a PNG or JPEG file from its header, so the output reports what was really
 * written (not what a backend claims). No image library for JPEG headers is installed; this reads only
 * the few header bytes and never decodes pixels.
 */
import { open } from 'node:fs/promises';

/** Dimensions of the PNG or JPEG at `path`; undefined when the header is not one of those. */
export async function imageDims(path: string): Promise<{ width: number; height: number } | undefined> {
  const fh = await open(path, 'r');
  try {
    const head = Buffer.alloc(64 * 1024);
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    return dimsOf(head.subarray(0, bytesRead));
  } finally {
    await fh.close();
  }
}

/** Dimensions from the first bytes of a PNG (IHDR) or JPEG (first SOFn marker). */
export function dimsOf(b: Buffer): { width: number; height: number } | undefined {
  if (b.length >= 24 && b.readUInt32BE(0) === 0x89504e47 && b.toString('latin1', 12, 16) === 'IHDR') return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  if (b.length < 4 || b[0] !== 0xff || b[1] !== 0xd8) return undefined;
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i++;
      continue;
    }
    const len = b.readUInt16BE(i + 2);
    // SOF0..SOF15 carry the frame size, except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
    i += 2 + len;
  }
  return undefined;
}
