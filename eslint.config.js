// ESLint flat config: @eslint/js and typescript-eslint recommended (syntax only, no type information, so
// `npx eslint .` stays fast), plus the layering rules of STYLE.md ("The shape of the code"):
//   - src/ and handlers/ are plain Node: they never import `electron`;
//   - handlers reach the host only through the handler SDK entry, src/sdk/index.ts;
//   - electron/ reaches src/ only through its public entry, src/index.ts.
//   - inside src/, layers bottom to top (docs/architecture.md): each imports only from the layers below it,
//     and agent/, bridge/, endpoint/, consent/ never import each other (SRC_LAYERS below).
// test/lint/layering.test.ts fails when one of these rules is switched off or weakened.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Messages of the layering rules (the layering test looks for them). */
export const LAYERING_MESSAGES = {
  electronInCore: 'src/ is plain Node: put Electron code in electron/ and reach src/ through its public entry (src/index.ts).',
  handlerDeepImport: 'Handlers import the handler SDK instead: ../../src/sdk/index.js is the only part of src/ a handler may use.',
  shellDeepImport: 'electron/ reaches src/ only through its public entry: import from ../src/index.js (add the export there if it is missing).',
  rendererImport: 'The renderer is a web page: it talks to the agent through the preload API or the local endpoint, never by importing modules.',
  /** A file of layer `name` imports a folder of a layer above it. */
  srcLayer: (name) => `Layer "${name}" of src/ imports only from the layers below it (docs/architecture.md): move the shared piece down, or wire the two together in src/app/.`,
  /** agent/, bridge/, endpoint/ or consent/ imports one of the others. */
  srcSibling: 'agent/, bridge/, endpoint/ and consent/ are siblings: they meet only through interfaces declared below them (src/seams/, src/sdk/, src/grants/) and are wired together in src/app/ (docs/architecture.md).',
};

/**
 * The layers inside src/, bottom to top (docs/architecture.md). A layer's files import only from the
 * layers below it (and their own); `siblings` folders of one layer do not import each other either.
 * `files`/`ignores` place single files: src/version.ts is at the bottom with base/, and the kit's tools
 * (sdk/testing.ts, sdk/manifest.ts) run a handler the way the agent does, so they sit above agent/ (but
 * import none of its siblings: `alsoBelow` names the folders of lower layers a layer may still not import).
 * cli/ and trial/ (the commands) are the top: no rule inside src/ binds them.
 */
export const SRC_LAYERS = [
  { name: 'base', folders: ['base', 'i18n'], files: ['src/version.ts'] },
  { name: 'protocol', folders: ['protocol'] },
  { name: 'foundations', folders: ['storage', 'config', 'identity', 'sdk', 'seams'], ignores: ['src/sdk/testing.ts', 'src/sdk/manifest.ts'] },
  { name: 'discovery and grants', folders: ['discovery', 'grants'] },
  { name: 'services', folders: ['agent', 'bridge', 'endpoint', 'consent'], siblings: true },
  { name: 'kit tools', folders: [], files: ['src/sdk/testing.ts', 'src/sdk/manifest.ts'], alsoBelow: ['bridge', 'endpoint', 'consent'] },
  { name: 'composition root', folders: ['app'] },
  { name: 'commands', folders: ['cli', 'trial'] },
];

const electronBan = {
  name: 'electron',
  message: LAYERING_MESSAGES.electronInCore,
};
const electronPatternBan = { group: ['electron/*'], message: LAYERING_MESSAGES.electronInCore };

/** A relative import that reaches one of the src/ `folders` (`./x/` from src/version.ts, `../x/`, `../../x/` deeper). */
const reaching = (folders) => `^\\.\\.?/(\\.\\./)*(${folders.join('|')})(/|$)`;

/** One config block per layer (and per sibling folder), each keeping the electron ban. */
function srcLayerBlocks() {
  const blocks = [];
  SRC_LAYERS.forEach((layer, i) => {
    const above = [...(layer.alsoBelow ?? []), ...SRC_LAYERS.slice(i + 1).flatMap((l) => l.folders)];
    const patternsFor = (extra) => [
      electronPatternBan,
      ...(above.length ? [{ regex: reaching(above), message: LAYERING_MESSAGES.srcLayer(layer.name) }] : []),
      ...extra,
    ];
    const rule = (extra) => ['error', { paths: [electronBan], patterns: patternsFor(extra) }];
    if (layer.siblings) {
      for (const f of layer.folders) {
        const others = layer.folders.filter((o) => o !== f);
        blocks.push({ files: [`src/${f}/**`], rules: { 'no-restricted-imports': rule([{ regex: reaching(others), message: LAYERING_MESSAGES.srcSibling }]) } });
      }
    } else {
      const files = [...layer.folders.map((f) => `src/${f}/**`), ...(layer.files ?? [])];
      blocks.push({ files, ...(layer.ignores ? { ignores: layer.ignores } : {}), rules: { 'no-restricted-imports': rule([]) } });
    }
  });
  return blocks;
}

// Globals written out here because the `globals` package is not a dependency.
const readonly = (names) => Object.fromEntries(names.map((n) => [n, 'readonly']));
const nodeGlobals = readonly([
  'process', 'console', 'Buffer', 'URL', 'URLSearchParams', 'TextEncoder', 'TextDecoder', 'AbortController', 'AbortSignal',
  'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'queueMicrotask',
  'structuredClone', 'fetch', 'Response', 'Request', 'Headers', 'globalThis', 'performance', 'crypto',
]);
const browserGlobals = readonly([
  'window', 'document', 'location', 'history', 'navigator', 'console', 'URL', 'URLSearchParams', 'WebSocket', 'fetch',
  'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'requestAnimationFrame', 'HTMLElement', 'Event',
  'CustomEvent', 'sessionStorage', 'localStorage', 'prompt', 'AbortController', 'Intl', 'Date', 'globalThis', 'Node', 'TextDecoder',
]);

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      '**/node_modules/**',
      '.demo/**',
      '.scratch/**',
      '.test-tmp-*/**',
      'examples/**/dist/**',
      'examples/**/build/**',
      'examples/**/*.min.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: { globals: nodeGlobals },
  },
  {
    // `_name` marks a value left out on purpose (e.g. a destructured field dropped from a copy).
    // The other entries are findings in code written before this config existed, reported as warnings
    // until their owners fix them (listed in docs/tray.md). The layering rules below are never relaxed.
    rules: {
      '@typescript-eslint/no-unused-vars': ['warn', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true }],
      '@typescript-eslint/no-explicit-any': 'warn',
      'prefer-const': 'warn',
      'preserve-caught-error': 'warn',
      'no-control-regex': 'warn',
    },
  },

  // --- Layering (STYLE.md). Later blocks replace earlier options for the same rule, so each block
  // --- repeats the electron ban it must keep.
  {
    files: ['src/**', 'handlers/**'],
    rules: {
      'no-restricted-imports': ['error', { paths: [electronBan], patterns: [electronPatternBan] }],
    },
  },
  ...srcLayerBlocks(),
  {
    files: ['handlers/**'],
    ignores: ['handlers/*/test/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [electronBan],
          patterns: [
            electronPatternBan,
            { regex: '(^|/)src(/|$)(?!sdk/index\\.js$)', message: LAYERING_MESSAGES.handlerDeepImport },
          ],
        },
      ],
    },
  },
  {
    files: ['electron/**'],
    ignores: ['electron/renderer/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '(^|/)src(/|$)(?!index\\.js$)', message: LAYERING_MESSAGES.shellDeepImport }] },
      ],
    },
  },
  {
    files: ['electron/renderer/**'],
    languageOptions: { globals: browserGlobals, sourceType: 'module' },
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'electron', message: LAYERING_MESSAGES.rendererImport }], patterns: [{ regex: '(^|/)src(/|$)|^electron/|^node:', message: LAYERING_MESSAGES.rendererImport }] },
      ],
    },
  },
  {
    // The bridge console: a plain web page served by the bridge (resources/console).
    files: ['resources/console/**'],
    languageOptions: { globals: browserGlobals, sourceType: 'script' },
  },
);
