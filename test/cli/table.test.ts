import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import stringWidth from 'string-width';
import { padDisplay, table } from '../../src/cli/table.js';
import { loadDisplayWidth } from '../../src/cli/display-width.js';
import { ROOT } from '../helpers/stack.js';

// As main.ts does for every command but a resident `run`.
await loadDisplayWidth();

test('a table with Chinese cells lines its columns up on the screen (display width, not string length)', () => {
  const out = table([
    ['函数', '状态', '时间'],
    ['files.read_text', '已完成', '2 ms'],
    ['camera.capture', '被拒绝（用户）', '15 ms'],
  ]).split('\n');
  // The third column starts at the same screen column on every line.
  const starts = out.map((l, i) => stringWidth(l.slice(0, l.indexOf(['时间', '2 ms', '15 ms'][i]!))));
  assert.equal(new Set(starts).size, 1, out.join('\n'));
  assert.equal(padDisplay('共享', 6), '共享  ');
  assert.equal(padDisplay('longer than', 3), 'longer than');
});

test('the CLI commands pad columns only through the display-width table', () => {
  const dir = join(ROOT, 'src', 'cli', 'commands');
  const found = readdirSync(dir).filter((f) => /\.padEnd\(|\.padStart\(/.test(readFileSync(join(dir, f), 'utf8')) && f !== 'trial.ts');
  assert.deepEqual(found, []);
});
