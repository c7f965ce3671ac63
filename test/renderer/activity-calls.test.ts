/**
 * Prompts and the activity screen, driven by keyboard in Debian's Chromium against a bridge and an agent
 * started by the CLI (`aios-device bridge`, `aios-device run`), confirmations by the page, a short
 * configured confirmation timeout (3 s):
 * - a high-risk call raises the prompt; Enter does nothing on it (focus is on the prompt, and a button
 *   focused without the user tabbing to it ignores Enter too); Tab then Enter on "Allow once" completes it;
 * - Tab to Deny and Space ends the call `rejected / user_rejected`; an unanswered prompt ends
 *   `rejected / confirmation_timeout`;
 * - the activity screen filters those calls (state, function, requester, time range), shows one call's
 *   details (sentence, decision and who, timings, the error explained by its type), and exports them:
 *   the CSV, parsed back with the RFC 4180 parser below, holds the same calls as the JSON export;
 * - axe-core finds no serious or critical violation with the details open.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { until } from '../helpers/stack.js';
import { cliSetup } from './stack.js';
import { SCREENS, axe, openScreen } from './page-checks.js';


/**
 * RFC 4180 CSV → rows of fields: fields separated by commas, records by CRLF (a lone LF too), a quoted
 * field may hold commas, CR, LF and doubled quotes. Throws on a quote inside an unquoted field or text
 * after a closing quote, so malformed output fails the test instead of parsing into something else.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let i = 0;
  if (text.endsWith('\r\n')) text = text.slice(0, -2);
  else if (text.endsWith('\n')) text = text.slice(0, -1);
  for (;;) {
    let field = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new Error('unterminated quoted field');
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += text[i++];
      }
      if (i < text.length && text[i] !== ',' && text[i] !== '\r' && text[i] !== '\n') throw new Error(`text after a closing quote at ${i}`);
    } else {
      while (i < text.length && text[i] !== ',' && text[i] !== '\r' && text[i] !== '\n') {
        if (text[i] === '"') throw new Error(`quote inside an unquoted field at ${i}`);
        field += text[i++];
      }
    }
    row.push(field);
    if (i >= text.length) {
      rows.push(row);
      return rows;
    }
    if (text[i] === ',') {
      i++;
      continue;
    }
    // End of record: CRLF (or LF).
    i += text[i] === '\r' && text[i + 1] === '\n' ? 2 : 1;
    rows.push(row);
    row = [];
  }
}

test('the test CSV parser follows RFC 4180 and refuses malformed input', () => {
  assert.deepEqual(parseCsv('a,b\r\n"x, y","say ""hi"""\r\n"two\r\nlines",\r\n'), [['a', 'b'], ['x, y', 'say "hi"'], ['two\r\nlines', '']]);
  assert.throws(() => parseCsv('a,b"c\r\n'), /quote inside/);
  assert.throws(() => parseCsv('"a"b\r\n'), /after a closing quote/);
  assert.throws(() => parseCsv('"open\r\n'), /unterminated/);
});

/** The CSV cell the page must write for a JSON value (the export's documented rules, docs/tray.md). */
function expectedCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  const s = String(v);
  return typeof v === 'string' && /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
}

const COLUMNS = ['call_id', 'function_id', 'state', 'error_type', 'decision', 'decided_by', 'remembered', 'requester_kind', 'requester_id', 'requester_name', 'workspace_id', 'user_id', 'sentence', 'resources', 'args_summary', 'accepted_at', 'finished_at', 'duration_ms'];

const focusedText = (page: Page) => page.evaluate<string>('document.activeElement?.textContent?.trim() ?? ""');
const focusedId = (page: Page) => page.evaluate<string>('document.activeElement?.id ?? ""');

describe('prompts and the activity screen, keyboard only, against a CLI-started bridge and agent', () => {
  let s: Awaited<ReturnType<typeof cliSetup>>;
  const ids: Record<string, string> = {};
  const ANN = { kind: 'agent', id: 'planner-1', name: 'Ann, "the" planner' };
  const EVIL = { kind: 'agent', id: 'sheet', name: '=HYPERLINK("x")\nsecond line' };

  before(async () => {
    s = await cliSetup({ agent: { confirmations: { provider: 'ui', timeout_ms: 3000 } } });
    await s.page.goto(`${s.ui.base}/ui/#token=${encodeURIComponent(s.endpoint.token)}`);
    await s.page.locator('#agent-state[data-state="connected"]').waitFor();
    await s.page.locator('#pause:not([disabled])').waitFor();
  });
  after(async () => {
    await s?.stop();
  });

  test('a high-risk call raises the prompt; Enter does nothing; Tab then Enter on Allow once completes it', async () => {
    const call = s.client.call('diagnostics.confirm', {}, { wait: true, confirm_timeout_ms: 60_000, requester: ANN });
    const prompt = s.page.getByRole('alertdialog');
    await prompt.waitFor();
    assert.equal(await s.page.locator('#prompt').getAttribute('data-level'), 'high');
    assert.equal(await focusedId(s.page), 'prompt', 'the prompt takes the focus itself, no button does');
    await s.page.keyboard.press('Enter');
    assert.equal(await prompt.isVisible(), true, 'Enter on the prompt answers nothing');
    assert.equal(await s.page.locator('#prompt [data-answer="allow_once"]:not([disabled])').count(), 1, 'no answer was started');
    // A button that has the focus without the user tabbing to it (e.g. left over from another prompt): Enter still does nothing.
    await s.page.locator('#prompt [data-answer="allow_once"]').focus();
    await s.page.keyboard.press('Enter');
    assert.equal(await s.page.locator('#prompt [data-answer="allow_once"]:not([disabled])').count(), 1, 'Enter on an un-tabbed-to button answers nothing');
    // The countdown is the configured-per-call 60 s, in the page's language.
    assert.match((await s.page.locator('#prompt-countdown').textContent()) ?? '', /^\d+ sec$/);

    await s.page.locator('#prompt').focus();
    await s.page.keyboard.press('Tab');
    assert.equal(await focusedText(s.page), 'Allow once');
    await s.page.keyboard.press('Enter');
    const { record } = await call;
    assert.equal(record.outcome?.state, 'completed', JSON.stringify(record.outcome?.error));
    assert.equal(record.outcome?.confirmation?.decided_by, 'user');
    ids['allowed'] = record.call_id;
    await prompt.waitFor({ state: 'hidden' });
  });

  test('Tab to Deny and Space: the call ends rejected / user_rejected', async () => {
    const call = s.client.call('diagnostics.confirm', {}, { wait: true, confirm_timeout_ms: 60_000, requester: EVIL });
    await s.page.getByRole('alertdialog').waitFor();
    assert.equal(await focusedId(s.page), 'prompt');
    await s.page.keyboard.press('Tab');
    await s.page.keyboard.press('Tab');
    assert.equal(await focusedText(s.page), 'Deny');
    await s.page.keyboard.press('Space');
    const { record } = await call;
    assert.equal(record.outcome?.state, 'rejected');
    assert.equal(record.outcome?.error?.type, 'user_rejected');
    ids['denied'] = record.call_id;
  });

  test('nobody answers: after the configured 3 s the call ends rejected / confirmation_timeout', async () => {
    const call = s.client.call('diagnostics.confirm', {}, { wait: true });
    await s.page.getByRole('alertdialog').waitFor();
    const { record } = await call;
    assert.equal(record.outcome?.state, 'rejected');
    assert.equal(record.outcome?.error?.type, 'confirmation_timeout');
    assert.equal(record.outcome?.confirmation?.decision, 'timeout');
    ids['timeout'] = record.call_id;
    await s.page.getByRole('alertdialog').waitFor({ state: 'hidden' });
    // The window says what happened, on the screen the prompt was on (nothing answered it here).
    const ended = s.page.locator('#prompt-ended');
    await ended.waitFor();
    assert.equal(await ended.textContent(), 'Time ran out for \u201cConfirmed no-op\u201d: nobody answered, so the call was refused.');
    assert.equal(await s.page.locator('#nav button[data-screen="prompt"]').getAttribute('aria-current'), 'page');
    const echo = await s.client.call('diagnostics.echo', { value: 1 }, { wait: true, requester: ANN });
    assert.equal(echo.record.outcome?.state, 'completed');
    ids['echo'] = echo.record.call_id;
  });

  /** The call ids the list shows now, after the filters were applied. */
  async function listed(): Promise<string[]> {
    const before = Number(await s.page.locator('#activity').getAttribute('data-refreshes'));
    await s.page.locator('#activity-filters button[type="submit"]').focus();
    await s.page.keyboard.press('Enter');
    // The page counts its finished refreshes: wait for the one this submit started.
    await until(async () => Number(await s.page.locator('#activity').getAttribute('data-refreshes')) > before, 30_000, 'the filtered list');
    return s.page.locator('#activity li').evaluateAll((lis) => lis.map((li) => (li as unknown as { dataset: { callId: string } }).dataset.callId));
  }

  test('the activity screen filters by state, function, requester and time range', async () => {
    await openScreen(s.page, 'activity');
    const all = await listed();
    for (const k of ['allowed', 'denied', 'timeout', 'echo']) assert.ok(all.includes(ids[k]!), `${k} is listed`);

    await s.page.getByLabel('State', { exact: true }).selectOption('rejected');
    assert.deepEqual((await listed()).sort(), [ids['denied']!, ids['timeout']!].sort(), 'state: rejected');
    assert.match((await s.page.locator('#activity-count').textContent()) ?? '', /^2 calls match the filters$/);
    for (const li of await s.page.locator('#activity li').all()) assert.equal(await li.getAttribute('data-state'), 'rejected');

    await s.page.getByLabel('State', { exact: true }).selectOption('');
    await s.page.getByLabel('Function', { exact: true }).focus();
    await s.page.keyboard.type('diagnostics.echo');
    assert.deepEqual(await listed(), [ids['echo']!], 'function: diagnostics.echo');

    await s.page.getByLabel('Function', { exact: true }).fill('');
    await s.page.getByLabel('Requester (name or id)').fill('planner-1');
    assert.deepEqual((await listed()).sort(), [ids['allowed']!, ids['echo']!].sort(), 'requester by id');
    await s.page.getByLabel('Requester (name or id)').fill('Ann, "the" planner');
    assert.deepEqual((await listed()).sort(), [ids['allowed']!, ids['echo']!].sort(), 'requester by name');

    await s.page.getByLabel('Requester (name or id)').fill('');
    await s.page.getByLabel('Finished from').fill('2999-01-01T00:00:00');
    assert.deepEqual(await listed(), [], 'nothing finished in the future');
    await s.page.getByText('No call matches the filters.', { exact: true }).waitFor();
    await s.page.getByLabel('Finished from').fill('2000-01-01T00:00:00');
    await s.page.getByLabel('Finished until').fill('2999-01-01T00:00:00');
    assert.equal((await listed()).length, 4, 'all four in a range that holds them');

    await s.page.locator('#activity-clear').focus();
    await s.page.keyboard.press('Enter');
    await s.page.getByLabel('Finished from').and(s.page.locator('[value=""]')).waitFor().catch(() => undefined);
    assert.equal(await s.page.getByLabel('Finished from').inputValue(), '');
    assert.deepEqual(s.problems, []);
  });

  test('each row says why a call did not complete in words (no wire code), and who asked as "asked by"', async () => {
    await listed();
    const row = async (k: string): Promise<string> => (await s.page.locator(`#activity li[data-call-id="${ids[k]}"] span.grow`).textContent()) ?? '';
    assert.equal(await row('denied'), 'Run a diagnostic no-op that needs your confirmation. \u2014 rejected \u00b7 asked by =HYPERLINK("x")\nsecond lineYou denied it.');
    const timeout = await row('timeout');
    assert.match(timeout, /^Run a diagnostic no-op that needs your confirmation\. \u2014 rejected \u00b7 asked by .+Nobody answered the confirmation in time\.$/s);
    // No requester given: not "unknown", which would read like the call's state.
    assert.doesNotMatch(timeout, /unknown/);
    for (const k of ['allowed', 'denied', 'timeout', 'echo']) assert.doesNotMatch(await row(k), /user_rejected|confirmation_timeout|\([a-z]+_[a-z_]+\)/, `${k}: no wire code in the row`);
  });

  test('one call\'s details: sentence, decision and who made it, timings, the error by its type; Escape closes', async () => {
    await listed();
    const row = s.page.locator(`#activity li[data-call-id="${ids['denied']}"]`);
    await row.getByRole('button', { name: 'Details' }).focus();
    await s.page.keyboard.press('Enter');
    const details = s.page.locator('#activity-details');
    await details.waitFor();
    assert.equal(await focusedId(s.page), 'activity-details', 'the focus moves to the details');
    assert.equal(await s.page.locator('#ad-sentence').textContent(), 'Run a diagnostic no-op that needs your confirmation.');
    assert.equal(await s.page.locator('#ad-function').textContent(), 'diagnostics.confirm');
    assert.equal(await s.page.locator('#ad-state').textContent(), 'rejected');
    assert.equal(await s.page.locator('#ad-decision').textContent(), 'denied, by you');
    assert.equal(await s.page.locator('#ad-error').textContent(), 'You denied it. (user_rejected)');
    assert.equal(await s.page.locator('#ad-error code').textContent(), 'user_rejected', 'the code as code');
    assert.equal(await s.page.locator('#ad-call-id').textContent(), ids['denied']);
    assert.match((await s.page.locator('#ad-requester').textContent()) ?? '', /^=HYPERLINK\("x"\)\nsecond line \(sheet\) · agent$/);
    // It never ran: the time shown is how long it waited, from acceptance to the user's answer.
    assert.match((await s.page.locator('#ad-duration').textContent()) ?? '', /^(\d+ ms|\d+(\.\d)? sec|\d+ min,? \d+ sec) from acceptance to the end \(it did not run\)$/);
    const finished = (await s.page.locator('#ad-finished').textContent()) ?? '';
    assert.match(finished, /^\d{1,2}\/\d{1,2}\/\d{2}, \d{1,2}:\d{2}:\d{2}\s?[AP]M$/, 'en short date and time');
    await axe(s.page, 'activity with details');
    mkdirSync(SCREENS, { recursive: true });
    await s.page.screenshot({ path: join(SCREENS, 'en-activity-details.png'), fullPage: true });

    await s.page.keyboard.press('Escape');
    await details.waitFor({ state: 'hidden' });
    assert.equal(await focusedText(s.page), 'Details', 'the focus goes back to the row it came from');
    assert.equal(await s.page.evaluate<string>('document.activeElement.closest("li").dataset.callId'), ids['denied']);

    // The timed-out call: decided by the agent, explained as such.
    await s.page.locator(`#activity li[data-call-id="${ids['timeout']}"]`).getByRole('button', { name: 'Details' }).click();
    assert.equal(await s.page.locator('#ad-decision').textContent(), 'no answer in time, by the agent');
    assert.equal(await s.page.locator('#ad-error').textContent(), 'Nobody answered the confirmation in time. (confirmation_timeout)');
    await s.page.locator('#activity-details-close').focus();
    await s.page.keyboard.press('Enter');
    await details.waitFor({ state: 'hidden' });
  });

  test('export: the CSV, parsed back, holds the same calls as the JSON export; filters apply to both', async () => {
    await listed();
    const save = async (id: string): Promise<{ name: string; text: string }> => {
      const [download] = await Promise.all([s.page.waitForEvent('download'), (async () => {
        await s.page.locator(id).focus();
        await s.page.keyboard.press('Enter');
      })()]);
      return { name: download.suggestedFilename(), text: readFileSync((await download.path())!, 'utf8') };
    };
    const json = await save('#activity-export-json');
    assert.match(json.name, /^aios-activity-.+\.json$/);
    const calls = JSON.parse(json.text) as Record<string, unknown>[];
    assert.deepEqual(calls.map((c) => c['call_id']).sort(), Object.values(ids).sort(), 'the JSON holds the four calls');
    await s.page.getByText(/^Exported 4 calls as JSON \([\d.]+ (byte|kB)\)\.$/).waitFor();

    const csv = await save('#activity-export-csv');
    assert.match(csv.name, /^aios-activity-.+\.csv$/);
    assert.ok(csv.text.startsWith('\uFEFF'), 'a byte-order mark, so spreadsheets read UTF-8');
    const rows = parseCsv(csv.text.slice(1));
    assert.deepEqual(rows[0], COLUMNS, 'the header');
    assert.equal(rows.length, calls.length + 1);
    for (const [i, c] of calls.entries()) {
      assert.deepEqual(rows[i + 1], COLUMNS.map((k) => expectedCell(c[k])), `row ${i + 1} (${String(c['call_id'])})`);
    }
    // The awkward requester survived quoting: commas, quotes, a newline, and a formula defused.
    const evil = rows.find((r) => r[0] === ids['denied'])!;
    assert.equal(evil[COLUMNS.indexOf('requester_name')], `'=HYPERLINK("x")\nsecond line`);
    assert.equal(rows.find((r) => r[0] === ids['allowed'])![COLUMNS.indexOf('requester_name')], 'Ann, "the" planner');
    assert.equal(rows.find((r) => r[0] === ids['denied'])![COLUMNS.indexOf('error_type')], 'user_rejected');
    assert.equal(rows.find((r) => r[0] === ids['timeout'])![COLUMNS.indexOf('error_type')], 'confirmation_timeout');

    // With a filter, both exports hold only what it lets through.
    await s.page.getByLabel('State', { exact: true }).selectOption('rejected');
    await listed();
    const rejected = JSON.parse((await save('#activity-export-json')).text) as { call_id: string }[];
    assert.deepEqual(rejected.map((c) => c.call_id).sort(), [ids['denied']!, ids['timeout']!].sort());
    const rejectedCsv = parseCsv((await save('#activity-export-csv')).text.slice(1));
    assert.deepEqual(rejectedCsv.slice(1).map((r) => r[0]).sort(), [ids['denied']!, ids['timeout']!].sort());
    await s.page.getByLabel('State', { exact: true }).selectOption('');
    assert.deepEqual(s.problems, []);
  });

  test('a full list says it is the list\'s cap, not every call there is', async () => {
    // Over the list's 100: the export holds them all, the list the latest 100 and says so.
    for (let i = 0; i < 100; i += 20) {
      const batch = await Promise.all(Array.from({ length: 20 }, () => s.client.call('diagnostics.echo', { value: i }, { wait: true })));
      for (const b of batch) assert.equal(b.record.outcome?.state, 'completed');
    }
    assert.equal((await listed()).length, 100);
    assert.equal(await s.page.locator('#activity-count').textContent(), 'The latest 100 calls (the most this list shows; an export holds all of them)');
    await s.page.getByLabel('Function', { exact: true }).fill('diagnostics.echo');
    assert.equal((await listed()).length, 100);
    assert.equal(await s.page.locator('#activity-count').textContent(), 'The latest 100 calls that match the filters (the most this list shows; an export holds all of them)');
    await s.page.getByLabel('Function', { exact: true }).fill('');
    assert.deepEqual(s.problems, []);
  });
});
