/**
 * Every folder under handlers/ (present and future): its committed tool.aios.yaml is exactly what its code
 * generates (`npm run manifests`), and a valid manifest naming every function the handler registers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { handlerFolders } from '../../src/cli/commands/handler.js';
import { parseToolYaml } from '../../src/discovery/tool-yaml.js';
import { generateManifest, importHandler, MANIFEST_FILE } from '../../src/kit/manifest.js';

const folders = handlerFolders();

test('there are handler folders to check', () => {
  assert.ok(folders.map((f) => basename(f)).includes('files'), 'handlers/files is found');
});

for (const dir of folders) {
  const name = basename(dir);
  test(`handlers/${name}/${MANIFEST_FILE} equals the manifest generated from its code`, async () => {
    const file = join(dir, MANIFEST_FILE);
    assert.ok(existsSync(file), `handlers/${name} has no ${MANIFEST_FILE}: run npm run manifests`);
    const generated = await generateManifest(await importHandler(dir, '.ts'));
    assert.equal(readFileSync(file, 'utf8'), generated, `handlers/${name}/${MANIFEST_FILE} differs from the code: run npm run manifests`);
    const y = parseToolYaml(generated);
    assert.equal(y.tool.id, name);
    // Ids usually start with the handler's name; media's are named by device class (camera.*, microphone.*, screen.*).
    assert.ok((y.capabilities ?? []).length > 0, 'a handler publishes at least one function');
  });
}
