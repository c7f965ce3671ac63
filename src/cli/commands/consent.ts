/**
 * CLI commands for consent: `grants`, `decisions [list|revoke ID]`, `activity`, `pause`, `resume`.
 * They open `<data_dir>/consent.sqlite` directly, so they work whether or not the agent runs; the
 * running agent caches what it reads and empties the cache when another process writes the database
 * (docs/consent.md), so a revoke or a pause applies to the next call.
 */
import type { Command } from 'commander';
import { say } from '../say.js';
import { openConsentDb, type Db } from '../../consent/db.js';
import { DecisionsStore } from '../../consent/decisions-store.js';
import { AuditLog, parseSince, type AuditEntry } from '../../consent/audit-log.js';
import { UsageError } from '../process.js';
import { PauseState } from '../../consent/pause-state.js';
import { chooseDataDir, configOf, withDirOptions, type ChosenDataDir, type DirOpts } from '../data-dir.js';
import { readUserGrants } from '../../grants/grant-store.js';
import { findRunningAgent } from '../../endpoint/local-client.js';
import { table } from '../table.js';

/** Says which data folder a command acts on when the user did not name one (stderr: JSON output stays clean). */
function sayDataDir(c: ChosenDataDir): void {
  if (c.from === 'option') return;
  const why = say(c.from === 'demo' ? 'cli.consent.why_demo' : 'cli.consent.why_default');
  process.stderr.write(say('cli.consent.acting_on', { dir: c.dir, why }) + '\n');
}

function withDb<T>(o: DirOpts, fn: (db: Db) => T): T {
  const chosen = chooseDataDir(o);
  sayDataDir(chosen);
  const db = openConsentDb(chosen.dir);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** Runs a parse whose error is the caller's mistake (exit 64). */
/** `--since`'s time: a bad one is a usage error in the user's language. */
function sinceOption(value: string): string {
  try {
    return parseSince(value);
  } catch {
    throw new UsageError(say('cli.usage.bad_since', { value }));
  }
}

/** Prints rows as JSON, or as a table under an optional intro line, or the `empty` sentence. */
function printRows<T>(rows: T[], json: boolean | undefined, t: { empty: string; intro?: string; header: string[]; row: (r: T) => string[] }): void {
  if (json) {
    process.stdout.write(JSON.stringify(rows, null, 2) + '\n');
    return;
  }
  if (!rows.length) {
    process.stdout.write(t.empty + '\n');
    return;
  }
  if (t.intro) process.stdout.write(t.intro + '\n');
  process.stdout.write(table([t.header, ...rows.map(t.row)]) + '\n');
}

/** Column headings in the user's language. */
function cols(...names: ('id' | 'call' | 'function' | 'resource' | 'scope' | 'since' | 'effect' | 'finished' | 'on' | 'runtime' | 'requester' | 'state' | 'decision' | 'by' | 'error' | 'ms')[]): string[] {
  return names.map((n) => say(`cli.col.${n}`));
}



/** A pause written where no agent runs changes nothing now: say so, rather than let "Paused" mislead. */
async function sayIfNoAgent(o: DirOpts): Promise<void> {
  const { dir } = chooseDataDir(o);
  if (!(await findRunningAgent(dir))) process.stderr.write(say('cli.consent.no_agent', { dir }) + '\n');
}

/** The runtime the bridge attested (protocol 1.2 §6.1), or "unverified" when none did. */
function runtime(e: AuditEntry): string {
  if (!e.runtime_id) return say('cli.consent.runtime_unverified');
  return e.runtime_name && e.runtime_name !== e.runtime_id ? `${e.runtime_name} (${e.runtime_id})` : e.runtime_id;
}

function requester(e: AuditEntry): string {
  if (!e.requester_kind) return '-';
  return `${e.requester_name ?? e.requester_id ?? '?'} (${e.requester_kind})`;
}

/** Adds the consent commands to the `aios-device` program. */
export function registerConsentCommands(program: Command): void {
  withDirOptions(program.command('grants'))
    .description(say('cli.help.grants'))
    .option('--json', say('cli.help.opt.json'))
    .action((o: DirOpts & { json?: boolean }) => {
      const configured = o.config ? (configOf(o)?.grants ?? {}) : undefined;
      const remembered = withDb(o, (db) => new DecisionsStore(db).list({ effect: 'allow' }));
      // Added or removed through the tray / control.grants.* (the config stays the ceiling).
      const user = readUserGrants(chooseDataDir(o).dir);
      if (o.json) {
        process.stdout.write(JSON.stringify({ configured: configured ?? null, user, remembered }, null, 2) + '\n');
        return;
      }
      if (configured !== undefined) {
        process.stdout.write(`${say('cli.consent.configured_grants', { file: String(o.config) })}\n${JSON.stringify(configured, null, 2)}\n\n`);
      }
      if (user.added.length || user.removed.length) {
        process.stdout.write(`${say('cli.consent.your_changes')}\n${JSON.stringify(user, null, 2)}\n\n`);
      }
      printRows(remembered, false, {
        empty: say('cli.consent.no_allows'),
        intro: say('cli.consent.allows_intro'),
        header: cols('id', 'function', 'resource', 'scope', 'since'),
        row: (d) => [String(d.id), d.function_id, d.resource, d.scope, d.created_at],
      });
    });

  withDirOptions(program.command('decisions'))
    .description(say('cli.help.decisions'))
    .argument('[action]', say('cli.help.decisions.action'), 'list')
    .argument('[id]', say('cli.help.decisions.id'))
    .option('--json', say('cli.help.opt.json'))
    .action((action: string, id: string | undefined, o: DirOpts & { json?: boolean }) => {
      if (action === 'revoke') {
        const n = Number(id);
        if (!id || !Number.isInteger(n)) throw new UsageError(say('cli.consent.revoke_usage'));
        const ok = withDb(o, (db) => new DecisionsStore(db).revoke(n));
        if (!ok) {
          process.stderr.write(say('cli.consent.no_decision', { id: n }) + '\n');
          process.exitCode = 1;
          return;
        }
        process.stdout.write(say('cli.consent.revoked', { id: n }) + '\n');
        return;
      }
      if (action !== 'list') throw new UsageError(say('cli.consent.unknown_action', { action }));
      printRows(withDb(o, (db) => new DecisionsStore(db).list()), o.json, {
        empty: say('cli.consent.no_decisions'),
        header: cols('id', 'effect', 'function', 'resource', 'scope', 'since'),
        row: (d) => [String(d.id), d.effect, d.function_id, d.resource, d.scope, d.created_at],
      });
    });

  withDirOptions(program.command('activity'))
    .description(say('cli.help.activity'))
    .option('--function <id>', say('cli.help.activity.function'))
    .option('--state <state>', say('cli.help.activity.state'))
    .option('--since <time>', say('cli.help.activity.since'))
    .option('--limit <n>', say('cli.help.activity.limit'), '50')
    .option('--json', say('cli.help.opt.json'))
    .action((o: DirOpts & { function?: string; state?: string; since?: string; limit: string; json?: boolean }) => {
      const limit = Number(o.limit);
      if (!Number.isInteger(limit) || limit < 1) throw new UsageError(say('cli.consent.limit'));
      const rows = withDb(o, (db) =>
        new AuditLog(db).list({
          functionId: o.function,
          state: o.state,
          since: o.since ? sinceOption(o.since) : undefined,
          limit,
        }),
      );
      printRows(rows, o.json, {
        empty: say('cli.consent.no_calls'),
        header: cols('finished', 'call', 'function', 'on', 'runtime', 'requester', 'state', 'decision', 'by', 'error', 'ms'),
        row: (e) => [e.finished_at, e.call_id, e.function_id, e.resources?.map((r) => r.label).join(', ') || '-', runtime(e), requester(e), e.state, e.decision ?? '-', e.decided_by ?? '-', e.error_type ?? '-', e.duration_ms === null ? '-' : String(e.duration_ms)],
      });
    });

  withDirOptions(program.command('pause'))
    .description(say('cli.help.pause'))
    .action(async (o: DirOpts) => {
      withDb(o, (db) => new PauseState(db).set(true, 'cli'));
      process.stdout.write(say('cli.consent.paused') + '\n');
      await sayIfNoAgent(o);
    });

  withDirOptions(program.command('resume'))
    .description(say('cli.help.resume'))
    .action(async (o: DirOpts) => {
      withDb(o, (db) => new PauseState(db).set(false, 'cli'));
      process.stdout.write(say('cli.consent.resumed') + '\n');
      await sayIfNoAgent(o);
    });
}
