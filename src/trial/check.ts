/**
 * A trial check as a row of the table (src/trial/checks/<group>.ts): its stable id, the guide line it stands
 * for, whether the run needs it, the checks it needs to have passed first (`needs`: `--only X` runs them
 * too), and what it does.
 */
import type { Observed, TrialContext } from './context.js';
import type { Message } from '../i18n/index.js';
import type { Trace } from './types.js';

export interface CheckDef {
  /** Stable: reports, `--only`, `--skip` and `--allow-not-run` name it. */
  id: string;
  /** What it checks, in the catalogue (rendered in the report's language). */
  title: Message;
  /** The guide line (GUIDE_LINES key). */
  guide: string;
  /** Whether a verdict short of pass fails the run (see failsRun); may depend on the device. */
  required: boolean | ((ctx: TrialContext, device: string) => boolean | Promise<boolean>);
  /** Runs once per `--device` (a column per device in the report); else once, on the first device. */
  perDevice?: boolean;
  /** For a per-device check: whether it applies to this device at all (a function it publishes). */
  appliesTo?(ctx: TrialContext, device: string): Promise<boolean>;
  /** Checks that must have passed (on the same device) before this one can observe anything. */
  needs?: string[];
  run(ctx: TrialContext, evidence: Trace[], device: string): Promise<Observed>;
}

/** A group's rows; contract's depend on what the devices publish. */
export type CheckGroup = (ctx: TrialContext) => CheckDef[] | Promise<CheckDef[]>;

/** The precondition every check that talks to a device needs. */
export const ONLINE = ['client.version'];
