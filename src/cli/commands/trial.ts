/**
 * `aios-device trial`: runs the end-plugin guide's trial checklist against a live bridge and device and
 * writes the report (docs/qa-trial.md). Exit 0 only when every required check passed.
 */
import { writeFileSync } from 'node:fs';
import { say } from '../say.js';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { CheckResult, Verdict } from '../../trial/types.js';
import { readProfile } from '../runtime-profile.js';
import { readUserFile, UsageError } from '../process.js';
import { isLocale, LOCALES, localeFromEnv, type Locale } from '../../i18n/index.js';
import { errorText } from '../../i18n/said.js';
import { DEFAULT_PROFILE } from './core.js';

/** Exit code of a trial whose required checks did not all pass. */
export const EXIT_TRIAL_FAILED = 1;

const collect = (v: string, prev: string[] = []) => [...prev, ...v.split(',').map((s) => s.trim()).filter(Boolean)];

const MARK: Record<Verdict, string> = { pass: '✓', fail: '✗', inconclusive: '~', not_run: '?', skipped: '–', simulated: '≈' };

/** Registers `trial`. */
export function registerTrialCommand(program: Command): void {
  program
    .command('trial')
    .description(say('cli.help.trial'))
    .option('--bridge <url>', say('cli.help.trial.bridge'))
    .option('--runtime <file>', say('cli.help.trial.runtime', { file: DEFAULT_PROFILE }))
    .option('--runtime-token-file <file>', say('cli.help.trial.runtime_token_file'))
    .option('--runtime-token <token>', say('cli.help.trial.runtime_token'))
    .option('--workspace <id>', say('cli.help.trial.workspace'))
    .option('--device <id>', say('cli.help.trial.device'), collect, [])
    .option('--only <ids>', say('cli.help.trial.only'), collect, [])
    .option('--skip <ids>', say('cli.help.trial.skip'), collect, [])
    .option('--unattended', say('cli.help.trial.unattended'))
    .option('--allow-effects', say('cli.help.trial.allow_effects'))
    .option('--control <mode>', say('cli.help.trial.control'), 'none')
    .option('--agent-data-dir <dir>', say('cli.help.trial.agent_data_dir'))
    .option('--allow-not-run <ids>', say('cli.help.trial.allow_not_run'), collect, [])
    .option('--expect-workspace <id>', say('cli.help.trial.expect_workspace'))
    .option('--expect-user <id>', say('cli.help.trial.expect_user'))
    .option('--report <file>', say('cli.help.trial.report'))
    .option('--json <file>', say('cli.help.trial.json'))
    .option('--lang <locale>', say('cli.help.trial.lang'))
    .action(async (o: Record<string, unknown>) => {
      const env = process.env;
      const explicit = (o['bridge'] as string | undefined) ?? env['AIOS_BRIDGE_URL'];
      const profileFile = (o['runtime'] as string | undefined) ?? env['AIOS_RUNTIME_PROFILE'];
      const profile = explicit && !profileFile ? undefined : safeProfile(resolve(profileFile ?? DEFAULT_PROFILE), !!explicit);
      let token = env['AIOS_RUNTIME_TOKEN'] ?? profile?.token;
      if (o['runtimeTokenFile']) token = readUserFile(o['runtimeTokenFile'] as string).trim();
      if (o['runtimeToken']) {
        process.stderr.write(say('cli.trial.token_in_argv') + '\n');
        token = o['runtimeToken'] as string;
      }
      const bridge = explicit ?? profile?.bridge_url;
      const workspace = (o['workspace'] as string | undefined) ?? env['AIOS_WORKSPACE'] ?? profile?.workspace_id;
      const devices = (o['device'] as string[]).length ? (o['device'] as string[]) : profile?.device_id ? [profile.device_id] : [];
      if (!bridge) throw new UsageError(say('cli.trial.missing_bridge'));
      if (!token) throw new UsageError(say('cli.trial.missing_token'));
      if (!workspace) throw new UsageError(say('cli.trial.missing_workspace'));
      if (!devices.length) throw new UsageError(say('cli.trial.missing_device'));
      const control = o['control'] as string;
      if (control !== 'none' && control !== 'local') throw new UsageError(say('cli.trial.bad_control'));
      const langOpt = o['lang'] as string | undefined;
      if (langOpt !== undefined && !isLocale(langOpt)) throw new UsageError(say('cli.trial.bad_lang', { lang: langOpt, locales: LOCALES.join(', ') }));
      const lang: Locale = langOpt ?? localeFromEnv();
      // Imported here: the trial's checks are loaded only by `trial` (issue 32: `run` at rest does not).
      const [{ runTrial }, { renderHtml }] = await Promise.all([import('../../trial/run-trial.js'), import('../../trial/report.js')]);
      const report = await runTrial({
        bridge,
        runtimeToken: token,
        workspace,
        devices,
        only: o['only'] as string[],
        skip: o['skip'] as string[],
        unattended: !!o['unattended'],
        allowEffects: !!o['allowEffects'],
        allowNotRun: o['allowNotRun'] as string[],
        control,
        lang,
        ...(o['agentDataDir'] ? { agentDataDir: resolve(o['agentDataDir'] as string) } : {}),
        ...(o['expectWorkspace'] ? { expectWorkspace: o['expectWorkspace'] as string } : {}),
        ...(o['expectUser'] ? { expectUser: o['expectUser'] as string } : {}),
        cli: { node: process.execPath, args: [...process.execArgv, process.argv[1]!] },
        onCheck: (c: CheckResult) => process.stdout.write(`${MARK[c.verdict]} ${c.verdict.padEnd(12)} ${c.id}${c.device && devices.length > 1 ? ` [${c.device}]` : ''}${c.required ? '' : say('cli.trial.optional')}: ${c.message}\n`),
      });
      if (o['json']) writeFileSync(o['json'] as string, JSON.stringify(report, null, 2) + '\n');
      if (o['report']) writeFileSync(o['report'] as string, renderHtml(report));
      const s = report.summary;
      const verdict = say(report.ok ? 'cli.trial.passed' : 'cli.trial.failed');
      const failed = s.required_failed.length ? say('cli.trial.required_failed', { ids: s.required_failed.join(', ') }) : '';
      process.stdout.write(`\n${say('cli.trial.summary', { verdict, pass: s.pass, fail: s.fail, inconclusive: s.inconclusive, not_run: s.not_run, skipped: s.skipped, simulated: s.simulated })}${failed}\n`);
      process.stdout.write(say('cli.trial.outputs_validated', { n: s.outputs_validated.validated, m: s.outputs_validated.functions }) + '\n');
      if (o['report']) process.stdout.write(say('cli.trial.report', { file: o['report'] as string }) + '\n');
      process.exitCode = report.ok ? 0 : EXIT_TRIAL_FAILED;
    });
}

function safeProfile(file: string, optional: boolean) {
  try {
    return readProfile(file);
  } catch (e) {
    if (optional) return undefined;
    throw new UsageError(errorText(e, localeFromEnv()));
  }
}
