/**
 * Draws one tray icon per state (electron/tray-icon.ts) into resources/icons/, with pngjs:
 * `tray-<state>.png` / `@2x` (colour, for Windows and Linux panels) and `trayTemplate-<state>.png` / `@2x`
 * (black on transparent, for the macOS menu bar, which recolours templates for light and dark).
 *
 * The base picture is the app's (a disc holding a "screen" with a dot). Each state adds its own badge in
 * the lower right, told apart by shape first (nothing, ring, cross, pause bars, three dots, "!", record
 * dot) so that the states differ in the monochrome template and without colour vision; the colour badge
 * has a white rim around a saturated fill, so it reads on light panels (the fill) and dark ones (the rim).
 * Also writes docs/images/tray-icons.png, the states side by side for the user guide.
 * Run: `node --import tsx scripts/make-tray-icons.ts` (the output is committed; rerun only to change the art).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PNG } from 'pngjs';
import { TRAY_ICON_STATES, type TrayIconState } from '../electron/tray-icon.js';

type Rgba = readonly [number, number, number, number];
/** A colour at the point (u, v) in [0,1]², or null for transparent. */
type Shader = (u: number, v: number) => Rgba | null;

const CLEAR: Rgba = [0, 0, 0, 0];
const BLACK: Rgba = [0, 0, 0, 255];
const WHITE: Rgba = [255, 255, 255, 255];
const BLUE: Rgba = [37, 99, 235, 255];
const GREY: Rgba = [107, 114, 128, 255];

/** Badge colours (fill); each is at least 3:1 against white and the white rim is 3:1 against black. */
const FILL: Record<Exclude<TrayIconState, 'connected'>, Rgba> = {
  connecting: [180, 83, 9, 255],
  offline: [55, 65, 81, 255],
  paused: [124, 58, 237, 255],
  busy: [4, 120, 87, 255],
  attention: [194, 65, 12, 255],
  capturing: [220, 38, 38, 255],
};

const inCircle = (u: number, v: number, cx: number, cy: number, r: number): boolean => (u - cx) ** 2 + (v - cy) ** 2 <= r * r;
const inRect = (u: number, v: number, x0: number, y0: number, x1: number, y1: number): boolean => u >= x0 && u <= x1 && v >= y0 && v <= y1;

/** The device glyph: a disc with a hollow rounded "screen" and a dot, like the app icon. */
function glyph(u: number, v: number, disc: Rgba, mark: Rgba): Rgba | null {
  if (!inCircle(u, v, 0.5, 0.5, 0.47)) return null;
  const rounded = (x0: number, y0: number, x1: number, y1: number, r: number): boolean => {
    const cx = Math.min(Math.max(u, x0 + r), x1 - r);
    const cy = Math.min(Math.max(v, y0 + r), y1 - r);
    return (u - cx) ** 2 + (v - cy) ** 2 <= r * r;
  };
  const screen = rounded(0.24, 0.26, 0.76, 0.64, 0.06) && !rounded(0.31, 0.33, 0.69, 0.57, 0.02);
  const dot = inCircle(u, v, 0.5, 0.75, 0.055);
  return screen || dot ? mark : disc;
}

// The badge: centre, radius of its body and of its rim (the gap around it in a template).
const BX = 0.7;
const BY = 0.7;
const BR = 0.25;
const RIM = 0.3;

/** Where the state's symbol is inside the badge body (true = symbol, drawn in the contrasting colour). */
function symbol(state: TrayIconState, u: number, v: number): boolean {
  const x = (u - BX) / BR; // -1..1 across the badge
  const y = (v - BY) / BR;
  switch (state) {
    case 'connecting': // a ring: the body is hollow
      return x * x + y * y <= 0.5 * 0.5;
    case 'offline': // a cross
      return (Math.abs(x - y) < 0.34 || Math.abs(x + y) < 0.34) && x * x + y * y <= 0.62 * 0.62;
    case 'paused': // two bars
      return inRect(x, y, -0.52, -0.55, -0.14, 0.55) || inRect(x, y, 0.14, -0.55, 0.52, 0.55);
    case 'busy': // three dots
      return [-0.5, 0, 0.5].some((cx) => inCircle(x, y, cx, 0, 0.2));
    case 'attention': // "!"
      return inRect(x, y, -0.16, -0.62, 0.16, 0.18) || inCircle(x, y, 0, 0.48, 0.17);
    case 'capturing': // a record dot inside a ring
      return (x * x + y * y >= 0.45 * 0.45 && x * x + y * y <= 0.62 * 0.62);
    case 'connected':
      return false;
  }
}

/** The colour icon of a state. */
function colourShader(state: TrayIconState): Shader {
  const dim = state === 'offline' || state === 'connecting';
  return (u, v) => {
    if (state !== 'connected') {
      if (inCircle(u, v, BX, BY, BR)) return symbol(state, u, v) ? WHITE : FILL[state];
      if (inCircle(u, v, BX, BY, RIM)) return WHITE;
    }
    return glyph(u, v, dim ? GREY : BLUE, WHITE);
  };
}

/** The macOS template of a state: black shapes on transparent, the symbol cut out of the badge. */
function templateShader(state: TrayIconState): Shader {
  return (u, v) => {
    if (state !== 'connected') {
      if (inCircle(u, v, BX, BY, BR)) return symbol(state, u, v) ? CLEAR : BLACK;
      if (inCircle(u, v, BX, BY, RIM)) return CLEAR;
    }
    const g = glyph(u, v, BLACK, CLEAR);
    return g && g[3] ? g : null;
  };
}

/** Renders a shader at `size` pixels with 4×4 supersampling (premultiplied, so edges do not darken). */
export function render(size: number, shade: Shader): PNG {
  const png = new PNG({ width: size, height: size });
  const n = 4;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      let r = 0, g = 0, b = 0, a = 0;
      for (let sy = 0; sy < n; sy++) {
        for (let sx = 0; sx < n; sx++) {
          const c = shade((x + (sx + 0.5) / n) / size, (y + (sy + 0.5) / n) / size);
          if (!c) continue;
          r += c[0] * c[3]; g += c[1] * c[3]; b += c[2] * c[3]; a += c[3];
        }
      }
      const i = (y * size + x) * 4;
      png.data[i] = a ? Math.round(r / a) : 0;
      png.data[i + 1] = a ? Math.round(g / a) : 0;
      png.data[i + 2] = a ? Math.round(b / a) : 0;
      png.data[i + 3] = Math.round(a / (n * n));
    }
  }
  return png;
}

/**
 * The states side by side for docs/user-guide.md: the 2× colour icons on a light and a dark panel, then
 * the templates on a light and a grey one, each magnified 3× (nearest neighbour, so pixels show as drawn).
 */
function contactSheet(dir: string): PNG {
  const scale = 3;
  const n = 32;
  const cell = n * scale + 12;
  const panels: [string, number][] = [['tray', 255], ['tray', 32], ['trayTemplate', 255], ['trayTemplate', 210]];
  const out = new PNG({ width: cell * TRAY_ICON_STATES.length, height: cell * panels.length });
  for (const [row, [prefix, bg]] of panels.entries()) {
    for (let y = row * cell; y < (row + 1) * cell; y++) {
      for (let x = 0; x < out.width; x++) out.data.set([bg, bg, bg, 255], (y * out.width + x) * 4);
    }
    for (const [k, state] of [...TRAY_ICON_STATES].reverse().entries()) {
      const icon = PNG.sync.read(readFileSync(join(dir, `${prefix}-${state}@2x.png`)));
      for (let y = 0; y < n * scale; y++) {
        for (let x = 0; x < n * scale; x++) {
          const si = (Math.floor(y / scale) * n + Math.floor(x / scale)) * 4;
          const a = icon.data[si + 3]! / 255;
          const o = ((row * cell + 6 + y) * out.width + k * cell + 6 + x) * 4;
          for (let c = 0; c < 3; c++) out.data[o + c] = Math.round(icon.data[si + c]! * a + bg * (1 - a));
        }
      }
    }
  }
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const dir = resolve(import.meta.dirname, '..', 'resources', 'icons');
  mkdirSync(dir, { recursive: true });
  for (const state of TRAY_ICON_STATES) {
    for (const [scale, suffix] of [[16, ''], [32, '@2x']] as const) {
      for (const [prefix, shader] of [['tray', colourShader(state)], ['trayTemplate', templateShader(state)]] as const) {
        const name = `${prefix}-${state}${suffix}.png`;
        writeFileSync(join(dir, name), PNG.sync.write(render(scale, shader)));
        process.stdout.write(`wrote resources/icons/${name}\n`);
      }
    }
  }
  const sheet = resolve(import.meta.dirname, '..', 'docs', 'images', 'tray-icons.png');
  writeFileSync(sheet, PNG.sync.write(contactSheet(dir)));
  process.stdout.write('wrote docs/images/tray-icons.png\n');
}
