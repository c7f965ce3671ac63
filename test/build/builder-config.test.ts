/**
 * build/electron-builder.yml against electron-builder's own JSON schema (the `scheme.json` that
 * app-builder-lib ships, draft-07), and every path it names checked on disk: packaging cannot run on these
 * machines (it downloads Electron and the installer tools), so this is what catches a broken config here.
 * Paths under dist/ are build output; for those the source they are built from must exist.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Ajv } from 'ajv';
import YAML from 'yaml';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CONFIG = join(ROOT, 'build', 'electron-builder.yml');

interface FileSet {
  from?: string;
  to?: string;
  filter?: string[];
}
interface BuilderConfig {
  appId: string;
  productName: string;
  directories: { buildResources: string; output: string };
  extraMetadata: { main: string };
  files: string[];
  extraResources: FileSet[];
  asarUnpack: string[];
  icon: string;
  linux: { target: string[]; icon: string };
  mac: { target: string[]; icon: string; entitlements?: string; entitlementsInherit?: string; extendInfo?: Record<string, unknown> };
  win: { target: string[]; icon: string };
  deb?: { depends?: string[] };
  electronFuses?: Record<string, boolean>;
}

function load(): BuilderConfig {
  return YAML.parse(readFileSync(CONFIG, 'utf8'), { uniqueKeys: true }) as BuilderConfig;
}

function validator() {
  const schema = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'app-builder-lib', 'scheme.json'), 'utf8')) as object;
  // strict: false because the schema uses keywords of its generator (e.g. `tsType`) that Ajv does not know.
  return new Ajv({ allErrors: true, strict: false }).compile(schema);
}

/** The source a built path comes from: dist/src/x.js ← src/x.ts, dist/electron/preload.cjs ← electron/preload.ts, dist/renderer ← electron/renderer, dist/validators ← src/kit/precompile.ts. */
function sourceOf(builtPath: string): string {
  if (builtPath === 'dist/renderer' || builtPath.startsWith('dist/renderer/')) return builtPath.replace(/^dist\/renderer/, 'electron/renderer');
  if (builtPath === 'dist/adapter-host') return 'resources/adapter-host/host.mjs';
  if (builtPath === 'dist/validators') return 'src/kit/precompile.ts';
  return builtPath.replace(/^dist\//, '').replace(/\.c?js$/, '.ts');
}

/** The fixed folder a glob starts from (`dist/src/**\/*.js` → `dist/src`). */
function globBase(pattern: string): string {
  const parts = pattern.split('/');
  const i = parts.findIndex((p) => /[*?{[]/.test(p));
  return (i < 0 ? parts : parts.slice(0, i)).join('/');
}

/** True when something on disk matches the path, allowing one `*` in its last fixed segment. */
function existsLoosely(path: string): boolean {
  if (existsSync(join(ROOT, path))) return true;
  const star = /^(.*\/)?([^/]*)\*([^/]*)$/.exec(path);
  if (!star) return false;
  const dir = join(ROOT, star[1] ?? '');
  return existsSync(dir) && readdirSync(dir).some((n) => n.startsWith(star[2]!) && n.endsWith(star[3]!));
}

test('the config is valid for electron-builder (its own schema)', () => {
  const validate = validator();
  const ok = validate(load());
  assert.equal(ok, true, JSON.stringify(validate.errors, null, 2));
});

test('the schema check is real: a misspelt key or a bad target type is rejected', () => {
  const validate = validator();
  assert.equal(validate({ ...load(), appID: 'x' }), false, 'unknown top-level keys are errors');
  assert.equal(validate({ ...load(), asarUnpack: 42 }), false);
});

test('identity and targets are the ones the project ships', () => {
  const c = load();
  assert.equal(c.productName, 'AIOS Device');
  assert.match(c.appId, /^[a-z0-9]+(\.[a-z0-9-]+)+$/);
  assert.deepEqual(c.linux.target, ['AppImage', 'deb']);
  assert.deepEqual(c.mac.target, ['dmg']);
  assert.deepEqual(c.win.target, ['nsis']);
  for (const native of ['better-sqlite3', '@napi-rs/keyring', 'serialport']) {
    assert.ok(c.asarUnpack.some((p) => p.startsWith(`node_modules/${native}/`)), `${native} is unpacked from the asar`);
  }
  const resourceDirs = c.extraResources.map((r) => r.from);
  assert.ok(resourceDirs.includes('resources'), 'resources/ ships as extra resources');
  // Built-in handlers ship inside the app where src/version.ts looks for them: dist/handlers beside dist/src.
  assert.ok(c.files.includes('dist/handlers/**/*.js'), 'compiled handlers ship beside dist/src');
  assert.ok(c.files.includes('handlers/**/tool.aios.yaml'), 'handler manifests ship');
  // The core's catalogues are JSON imported by src/i18n/*.ts: tsc copies them to dist/src/i18n/<owner>/, and they must ship.
  assert.ok(c.files.includes('dist/src/i18n/*/*.json'), 'the core, CLI and trial catalogues ship beside the code that imports them');
  // SQL migration files are read from disk beside the compiled modules (scripts/copy-assets.mjs puts them there).
  assert.ok(c.files.includes('dist/src/**/*.sql'), 'the PostgreSQL migration files ship beside dist/src/bridge/store/pg-store.js');
  // The window's pages ship built (scripts/build-renderer.mjs), where src/version.ts's RENDERER_DIR finds them; their TypeScript sources do not.
  assert.ok(c.files.includes('dist/renderer/**'), 'the built pages ship beside dist/src, where the /ui/ route and the window serve them from');
  assert.ok(c.files.includes('dist/validators/*.cjs'), 'the precompiled validators ship beside dist/src, where schema-validator.js looks them up');
  assert.ok(!c.files.some((f) => f.startsWith('electron/renderer')), 'the pages\' sources do not ship');
  // deb.depends replaces electron-builder's defaults: Electron's own libraries must be listed again.
  const defaults = ['libgtk-3-0', 'libnotify4', 'libnss3', 'libxss1', 'libxtst6', 'xdg-utils', 'libatspi2.0-0', 'libuuid1', 'libsecret-1-0'];
  for (const d of defaults) assert.ok((c.deb?.depends ?? defaults).includes(d), `deb depends on ${d}`);
});

test('every path the config names exists (or, for build output, its source does)', () => {
  const c = load();
  const missing: string[] = [];
  const need = (what: string, path: string) => {
    if (path.startsWith('dist/')) {
      const src = sourceOf(path);
      if (!existsSync(join(ROOT, src))) missing.push(`${what}: ${path} (built from ${src})`);
    } else if (!existsLoosely(path)) missing.push(`${what}: ${path}`);
  };
  need('directories.buildResources', c.directories.buildResources);
  need('extraMetadata.main', c.extraMetadata.main);
  for (const f of c.files.filter((p) => !p.startsWith('!'))) need('files', globBase(f));
  for (const r of c.extraResources) {
    if (!r.from) continue;
    need('extraResources.from', r.from);
    // A filter that names files (not only exclusions) must match at least one of them.
    for (const pattern of (r.filter ?? []).filter((p) => !p.startsWith('!') && p !== '**/*')) {
      const name = pattern.replace(/^\*\*\//, '');
      if (r.from.startsWith('dist/') || name.includes('*')) continue;
      const base = join(ROOT, r.from);
      const found = readdirSync(base, { recursive: true }).some((p) => String(p).endsWith(name));
      if (!found && name !== 'adapter.json') missing.push(`extraResources ${r.from} filter ${pattern} matches nothing`);
    }
  }
  for (const p of c.asarUnpack.filter((x) => x.startsWith('node_modules/'))) need('asarUnpack', globBase(p) || dirname(p));
  for (const icon of [c.icon, c.linux.icon, c.mac.icon, c.win.icon]) need('icon', icon);
  for (const e of [c.mac.entitlements, c.mac.entitlementsInherit]) if (e) need('mac.entitlements', e);
  assert.deepEqual(missing, []);
});

test('macOS: camera, microphone and Bluetooth usage descriptions and entitlements (media, bluetooth handlers)', () => {
  const c = load();
  const info = c.mac.extendInfo ?? {};
  for (const k of ['NSCameraUsageDescription', 'NSMicrophoneUsageDescription']) assert.match(String(info[k] ?? ''), /^AIOS Device uses the .+ only when you confirm/, k);
  // Without it macOS kills the process at the first CoreBluetooth call.
  assert.match(String(info['NSBluetoothAlwaysUsageDescription'] ?? ''), /^AIOS Device uses Bluetooth /);
  const plist = readFileSync(join(ROOT, c.mac.entitlements ?? 'missing'), 'utf8');
  for (const k of ['com.apple.security.device.camera', 'com.apple.security.device.audio-input']) assert.match(plist, new RegExp(`<key>${k.replace(/\./g, '\\.')}</key>\\s*<true/>`), k);
});

test('the app icon is a PNG of at least 512×512 (what dmg and nsis need to derive their formats)', () => {
  const c = load();
  const png = readFileSync(join(ROOT, c.icon));
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.ok(png.readUInt32BE(16) >= 512 && png.readUInt32BE(20) >= 512, `icon is ${png.readUInt32BE(16)}×${png.readUInt32BE(20)}`);
  for (const tray of ['tray.png', 'tray@2x.png', 'trayTemplate.png', 'trayTemplate@2x.png']) {
    assert.ok(statSync(join(ROOT, 'resources', 'icons', tray)).size > 0, `${tray} exists`);
  }
});

test('Electron fuses: no run-as-node, encrypted cookies, asar integrity (through electron-builder\'s own option)', () => {
  const c = load();
  const fuses = c.electronFuses ?? {};
  assert.equal(fuses['runAsNode'], false, 'ELECTRON_RUN_AS_NODE is ignored');
  assert.equal(fuses['enableCookieEncryption'], true);
  assert.equal(fuses['enableEmbeddedAsarIntegrityValidation'], true);
  assert.equal(fuses['onlyLoadAppFromAsar'], true, 'integrity means nothing if an unpacked app/ folder could be loaded instead');
  assert.equal(fuses['enableNodeOptionsEnvironmentVariable'], false);
  assert.equal(fuses['enableNodeCliInspectArguments'], false);
  // The schema knows the option and its keys: a misspelt fuse is refused, so the test above cannot pass on a typo.
  const validate = validator();
  assert.equal(validate({ ...c, electronFuses: { ...fuses, runAsNodee: false } }), false, 'unknown fuse names are errors');
  assert.equal(validate({ ...c, electronFuses: { ...fuses, runAsNode: 'no' } }), false);
});

test('with runAsNode off, nothing runs the app binary as Node: the adapters\' host ships as a bundle outside app.asar', () => {
  const c = load();
  assert.equal(c.electronFuses?.['runAsNode'], false);
  const host = c.extraResources.find((r) => r.from === 'dist/adapter-host');
  assert.deepEqual(host && { from: host.from, to: host.to }, { from: 'dist/adapter-host', to: 'adapter-host' }, 'the host bundle lands in <resources>/adapter-host');
  // ELECTRON_RUN_AS_NODE would be ignored by the packaged binary: no code may rely on it.
  const users = readdirSync(join(ROOT, 'src'), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts') && readFileSync(join(ROOT, 'src', f), 'utf8').includes('ELECTRON_RUN_AS_NODE'));
  assert.deepEqual(users, []);
  assert.match(readFileSync(join(ROOT, 'package.json'), 'utf8'), /node scripts\/build-adapter-host\.mjs/, 'npm run build bundles the host');
  assert.match(readFileSync(join(ROOT, 'scripts', 'build-electron.mjs'), 'utf8'), /buildAdapterHost\(/, 'the tray build bundles the host');
});

test('publisher identity lives in package.json (the builder schema refuses it), as placeholders to override', () => {
  const validate = validator();
  assert.equal(validate({ ...load(), author: 'x', homepage: 'https://x.invalid/' }), false, 'electron-builder.yml cannot carry author/homepage');
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { author?: string; homepage?: string };
  // The deb and AppImage targets need a maintainer name and email and a homepage; .invalid marks them as placeholders.
  assert.match(pkg.author ?? '', /^[^<>]+ <[^@\s]+@[^>\s]+>$/, 'author is "name <email>"');
  assert.equal(pkg.author, 'AIOS Device contributors <maintainers@aios-device.invalid>');
  assert.equal(pkg.homepage, 'https://aios-device.invalid/');
  assert.doesNotThrow(() => new URL(pkg.homepage!));
});
