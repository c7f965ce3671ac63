/**
 * The manifest (`tool.aios.yaml`) of a handler folder, generated from the handler's code: the tool's
 * identity from `defineHandler` (name, title, description, version), one capability per function from
 * its descriptor. The committed file must equal this output (test/sdk/manifests.test.ts); regenerate
 * with `npm run manifests` (aios-device handler manifest).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Document, type YAMLMap, type YAMLSeq } from 'yaml';
import { GrantStore } from '../grants/grant-store.js';
import { silentLogger } from '../base/logger.js';
import { APP_VERSION, MODULE_EXT } from '../version.js';
import type { Handler } from '../sdk/index.js';
import { asInstance } from '../sdk/instance.js';

/** The file name of a handler's manifest. */
export const MANIFEST_FILE = 'tool.aios.yaml';

/** Imports `<dir>/index.ts` (or .js) and returns its default Handler. */
export async function importHandler(dir: string, ext = MODULE_EXT): Promise<Handler> {
  const mod = (await import(pathToFileURL(join(dir, 'index' + ext)).href)) as { default?: Handler };
  const h = mod.default;
  if (!h || typeof h.create !== 'function' || typeof h.name !== 'string') throw new Error(`${dir}: index${ext} has no default export made with defineHandler`);
  return h;
}

/**
 * The manifest text for a handler. Its functions come from `create()` with an empty environment (no
 * grants, no options, a throwaway data dir), so a handler's function list must not depend on them.
 */
export async function generateManifest(h: Handler): Promise<string> {
  if (!h.title || !h.description) throw new Error(`handler ${h.name}: defineHandler needs a title and a description (they go into ${MANIFEST_FILE})`);
  const dataDir = mkdtempSync(join(tmpdir(), `aios-manifest-${h.name}-`));
  let created;
  try {
    const grants = new GrantStore();
    if (h.grantKinds?.length) grants.registerKinds(h.name, h.grantKinds);
    const log = silentLogger();
    created = asInstance(await h.create({ grants, options: {}, dataDir, log, appVersion: APP_VERSION, listFunctions: () => [] }));
    await created.dispose?.();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  if (!created.functions.length) throw new Error(`handler ${h.name}: create() returned no functions`);
  const capabilities = created.functions.map(({ descriptor: d }) => ({
    id: d.id,
    name: d.name,
    capability_type: d.capability_type,
    access: d.access,
    confirmation: d.confirmation,
    permission: d.permission_level,
  }));
  const doc = new Document({
    tool: { id: h.name, name: h.title, version: h.version ?? '1.0.0', description: h.description },
    capabilities,
    entry: 'index.ts',
  });
  const about = h.about ? h.about.split('\n').map((l) => ` ${l}`.trimEnd()) : [];
  doc.commentBefore = [' Generated from the handler\'s code by `npm run manifests`: do not edit by hand.', ...about].join('\n');
  for (const item of (doc.get('capabilities') as YAMLSeq<YAMLMap>).items) item.flow = true;
  return doc.toString({ lineWidth: 0 }).replace(/^(# .*\n)\n/m, '$1');
}
