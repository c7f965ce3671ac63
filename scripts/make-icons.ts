/**
 * Draws the app and tray icons into resources/icons/ as PNG files, with node:zlib as the only encoder
 * (no image tools or downloads needed). The picture: a blue disc holding a white "screen" with a dot, the
 * device; macOS tray "Template" variants are the same shape in black on transparent, as macOS expects.
 * Run: `node --import tsx scripts/make-icons.ts` (the output is committed; rerun only to change the art).
 */
import { crc32, deflateSync } from 'node:zlib';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

type Rgba = [number, number, number, number];

/** Encodes 8-bit RGBA pixels (row-major, `size`×`size`) as a PNG. */
export function encodePng(size: number, pixels: Uint8Array): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // colour type RGBA
  const rows = Buffer.alloc(size * (size * 4 + 1));
  for (let y = 0; y < size; y++) {
    rows[y * (size * 4 + 1)] = 0; // filter: none
    Buffer.from(pixels.buffer, pixels.byteOffset + y * size * 4, size * 4).copy(rows, y * (size * 4 + 1) + 1);
  }
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(rows, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}

/** Which colour the point (u, v) in [0,1]² has, or null for transparent. */
function shade(u: number, v: number, disc: Rgba, mark: Rgba): Rgba | null {
  const dx = u - 0.5;
  const dy = v - 0.5;
  if (dx * dx + dy * dy > 0.47 * 0.47) return null;
  // The "screen": a rounded rectangle, hollow, with a dot below it.
  const inRect = (x0: number, y0: number, x1: number, y1: number, r: number): boolean => {
    const cx = Math.min(Math.max(u, x0 + r), x1 - r);
    const cy = Math.min(Math.max(v, y0 + r), y1 - r);
    return (u - cx) ** 2 + (v - cy) ** 2 <= r * r;
  };
  const screen = inRect(0.24, 0.26, 0.76, 0.64, 0.06) && !inRect(0.31, 0.33, 0.69, 0.57, 0.02);
  const dot = (u - 0.5) ** 2 + (v - 0.75) ** 2 <= 0.055 ** 2;
  return screen || dot ? mark : disc;
}

/** Renders the icon at `size` pixels with 4×4 supersampling for smooth edges. */
export function drawIcon(size: number, disc: Rgba, mark: Rgba): Uint8Array {
  const out = new Uint8Array(size * size * 4);
  const n = 4;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      let r = 0, g = 0, b = 0, a = 0;
      for (let sy = 0; sy < n; sy++) {
        for (let sx = 0; sx < n; sx++) {
          const c = shade((x + (sx + 0.5) / n) / size, (y + (sy + 0.5) / n) / size, disc, mark);
          if (!c) continue;
          // Premultiplied, so transparent samples do not darken the edge.
          r += c[0] * c[3]; g += c[1] * c[3]; b += c[2] * c[3]; a += c[3];
        }
      }
      const i = (y * size + x) * 4;
      out[i] = a ? Math.round(r / a) : 0;
      out[i + 1] = a ? Math.round(g / a) : 0;
      out[i + 2] = a ? Math.round(b / a) : 0;
      out[i + 3] = Math.round(a / (n * n));
    }
  }
  return out;
}

const BLUE: Rgba = [37, 99, 235, 255];
const WHITE: Rgba = [255, 255, 255, 255];
const BLACK: Rgba = [0, 0, 0, 255];
const HOLE: Rgba = [0, 0, 0, 0];

const dir = resolve(import.meta.dirname, '..', 'resources', 'icons');
mkdirSync(dir, { recursive: true });
const files: [string, number, Rgba, Rgba][] = [
  ['icon.png', 512, BLUE, WHITE],
  ['tray.png', 16, BLUE, WHITE],
  ['tray@2x.png', 32, BLUE, WHITE],
  ['trayTemplate.png', 16, BLACK, HOLE],
  ['trayTemplate@2x.png', 32, BLACK, HOLE],
];
for (const [name, size, disc, mark] of files) {
  writeFileSync(join(dir, name), encodePng(size, drawIcon(size, disc, mark)));
  process.stdout.write(`wrote resources/icons/${name} (${size}×${size})\n`);
}
