/**
 * The Settings section of the page against a real bridge and agent (files handler on): sharing a folder in
 * the page (path, name, read only) makes a runtime's `files.list_dir` on it succeed; removing it in the page
 * makes the same call fail again; a refused path shows a localised error and changes nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setup } from './stack.js';
import { openScreen } from './page-checks.js';

test('sharing a folder in Settings makes files.list_dir on it succeed; removing it ends that', async () => {
  const s = await setup({ agent: { handlers: { diagnostics: { enabled: true }, files: { use_trash: false } } } });
  try {
    const folder = join(s.dir, 'shared');
    mkdirSync(folder);
    writeFileSync(join(folder, 'report.txt'), 'hello');
    const list = () => s.client.call('files.list_dir', { root: 'Reports', path: '' }, { wait: true });

    const before = await list();
    assert.notEqual(before.record.outcome?.state, 'completed', 'nothing shared yet: the call fails');

    await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
    await openScreen(s.page, 'shares');
    const settings = s.page.locator('#screen-shares');
    await s.page.getByText('Nothing is shared.', { exact: true }).waitFor();

    // A path the files handler refuses: a localised error, nothing shared.
    await s.page.getByLabel('Folder path').fill('/proc');
    await settings.getByRole('button', { name: 'Share folder', exact: true }).click();
    await s.page.locator('#error:not([hidden])').waitFor();
    assert.match((await s.page.locator('#error').textContent()) ?? '', /^The agent refused the request/, 'the error in the page language, by its type');
    assert.equal(await s.page.locator('#grants li').count(), 0);

    await s.page.getByLabel('Folder path').fill(folder);
    await s.page.getByLabel('Name (optional)').fill('Reports');
    await s.page.getByLabel('Access').selectOption('read');
    await settings.getByRole('button', { name: 'Share folder', exact: true }).click();
    const row = s.page.locator('#grants li[data-kind="files"]');
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /^Folder: Reports \(.+\) \(Read only\)Remove$/);

    const after = await list();
    assert.equal(after.record.outcome?.state, 'completed', JSON.stringify(after.record.outcome?.error));
    assert.deepEqual((after.record.outcome?.output as { entries: { name: string }[] }).entries.map((e) => e.name), ['report.txt']);

    await row.getByRole('button', { name: 'Remove Reports', exact: true }).click();
    await s.page.getByText('Nothing is shared.', { exact: true }).waitFor();
    const removed = await list();
    assert.notEqual(removed.record.outcome?.state, 'completed', 'the folder is no longer shared');
    assert.deepEqual(s.problems, []);
  } finally {
    await s.stop();
  }
});
