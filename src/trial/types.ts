/** The trial's results: checks, verdicts, evidence and the report they make (docs/qa-trial.md). */
import type { Locale, Message } from '../i18n/index.js';

/**
 * A check's verdict (stable names, docs/qa-trial.md): `pass` observed what the guide asks for; `fail`
 * observed the opposite; `inconclusive` ran but could not observe it; `not_run` a precondition is missing
 * (the message names the flag or config that gives it); `skipped` by `--skip`; `simulated` the trial itself
 * stood in for a person or a fault it could not cause. Only `pass` is a pass.
 */
export type Verdict = 'pass' | 'fail' | 'inconclusive' | 'not_run' | 'skipped' | 'simulated';

/** Every verdict, weakest first: a checklist line shows the weakest verdict of its required checks. */
export const VERDICTS: readonly Verdict[] = ['fail', 'inconclusive', 'not_run', 'skipped', 'simulated', 'pass'];

/** The weakest of `vs` (`not_run` for none). */
export function weakest(vs: readonly Verdict[]): Verdict {
  if (!vs.length) return 'not_run';
  return VERDICTS.find((v) => vs.includes(v))!;
}

/** One line of the guide's checklist: the weakest verdict of its required checks (of all its checks when none is required). */
export interface LineResult {
  line: string;
  verdict: Verdict;
  /** The ids of the checks that stand for this line. */
  checks: string[];
}

/** One request and what came back, as the report shows it on click. */
export interface Evidence {
  label: string;
  request?: unknown;
  response?: unknown;
  ms?: number;
}

/** Evidence as a check records it: its label a catalogue message, rendered in the report's language. */
export interface Trace extends Omit<Evidence, 'label'> {
  label: Message;
}

/** One check's result. */
export interface CheckResult {
  id: string;
  title: string;
  /** The line of the end-plugin guide's trial checklist (试运行与联调) this check stands for. */
  guide: string;
  required: boolean;
  /** The device it ran on, for a check that runs on every `--device` (a column per device in the report). */
  device?: string;
  /** True when it ran only because a chosen check needs it (`--only`). */
  precondition?: boolean;
  verdict: Verdict;
  /** What it observed, in the report's language. */
  message: string;
  /** The message's catalogue key (stable) and its parameters as text: what came from the device, paths, ids. */
  message_key: string;
  message_params?: Record<string, string>;
  /** Contract checks: the trial validated a completed call's output against `output_schema`. */
  output_validated?: boolean;
  evidence: Evidence[];
}

/** The whole report, as written to `--json` and rendered to `--report`. */
export interface TrialReport {
  /** The language the report is rendered in (`--lang`, else the tester's locale). */
  lang?: Locale;
  tool: { name: string; version: string; protocol_version: string };
  started_at: string;
  finished_at: string;
  bridge: string;
  devices: string[];
  environment: { platform: string; arch: string; node: string; bridge_min_client_version?: string | null; clients: Record<string, unknown>[] };
  options: Record<string, unknown>;
  summary: Record<Verdict, number> & {
    required_failed: string[];
    /** "Functions whose output was validated: N of M" (one per function and device). */
    outputs_validated: { validated: number; functions: number };
  };
  /** The scratch share the run added and removed (`--allow-effects`), or why there was none. */
  scratch?: { root: string; dir: string } | { problem: string };
  ok: boolean;
  /** The guide's lines, each with the weakest verdict of its required checks. */
  lines: LineResult[];
  checks: CheckResult[];
}

/** The guide's lines, in its words and ours (the report maps every check to one of these). */
export const GUIDE_LINES: Record<string, { zh: string; en: string }> = {
  '1': { zh: '客户端版本支持当前端插件协议', en: 'The client version supports the current end-plugin protocol' },
  '2': { zh: '设备登录了正确用户和工作空间', en: 'The device is signed in to the right user and workspace' },
  '3': { zh: '函数标识、输入参数和输出参数与平台一致', en: 'Function ids, input and output parameters match the platform' },
  '4': { zh: '文件、摄像头、麦克风或设备权限已经授予', en: 'File, camera, microphone or device permissions are granted' },
  '5': { zh: '断网、设备离线、权限拒绝和执行超时都有可见错误', en: 'Network loss, device offline, permission denied and timeouts all surface as visible errors' },
  '6': { zh: '高风险本地操作在执行前获得用户确认', en: 'High-risk local operations are confirmed by the user before they run' },
  extra: { zh: '建议覆盖：多设备、离线重连、版本过旧、重复调用、执行中取消、返回字段缺失', en: 'Also: several devices of one user, reconnect after offline, outdated client, duplicate call, cancel while running, missing output fields' },
};
