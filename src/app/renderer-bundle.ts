/**
 * The window's pages (electron/renderer/, TypeScript) are served built (dist/renderer/: one bundled script
 * per page). A compiled agent serves what `npm run build` made. An agent run from a source checkout under
 * tsx (`npm test`, `tsx src/cli/main.ts run`) builds nothing first, so here it builds the pages itself when
 * a source is newer than the last build (esbuild, tens of milliseconds), through the same script as
 * `npm run build` (scripts/build-renderer.mjs). That keeps `npm test` on a clean clone and a test run
 * after an edit to the page on the page as it is, without a build step to remember.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '../base/logger.js';
import { MODULE_EXT, PROJECT_ROOT, RENDERER_DIR } from '../version.js';

/** The build script's entry (scripts/build-renderer.mjs). */
interface RendererBuilder {
  buildRenderer(opts: { out?: string; ifStale?: boolean }): Promise<boolean>;
}

/** The script that builds the pages, present in a source checkout only. */
const BUILD_SCRIPT = join(PROJECT_ROOT, 'scripts', 'build-renderer.mjs');

/**
 * The folder of the built pages for the local endpoint's `/ui/`, built first when this agent runs from
 * source and the build is missing or older than the sources. A build that fails is logged and the folder
 * served as it is (the agent runs without its page rather than not at all).
 */
export async function rendererDir(log: Logger): Promise<string> {
  if (MODULE_EXT === '.ts' && existsSync(BUILD_SCRIPT)) {
    try {
      const builder = (await import(pathToFileURL(BUILD_SCRIPT).href)) as RendererBuilder;
      if (await builder.buildRenderer({ out: RENDERER_DIR, ifStale: true })) log.debug({ dir: RENDERER_DIR }, 'built the window pages from source');
    } catch (e) {
      log.warn({ err: (e as Error).message, dir: RENDERER_DIR }, 'could not build the window pages (electron/renderer/): /ui/ serves the last build, if any');
    }
  }
  return RENDERER_DIR;
}
