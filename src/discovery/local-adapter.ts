/**
 * Decides whether a local third-party adapter may run (PROTOCOL.md §7.3): signature against the trust store,
 * code bound to the signed card, required software present; then loads it. Every refusal is a reason (English, and as a
 * catalogue message), never an exception, so one broken adapter never stops the others.
 */
import type { FunctionDefinition, HandlerEnv } from '../sdk/index.js';
import { verifyCard } from '../protocol/card-sign.js';
import { readCheckedCode, readCodeBinding, type CodeBytes } from './code-binding.js';
import { executableExists, type DesktopEntry } from './desktop-entries.js';
import { privateCopy } from './private-copy.js';
import { mkdir, rm } from 'node:fs/promises';
import { effectiveLevel, McpAdapter } from './mcp-adapter.js';
import type { PermissionLevel } from '../protocol/messages.js';
import type { AdapterCandidate } from './adapter-scanner.js';
import type { AdapterCard, CodeBinding } from '../protocol/manifest-schemas.js';
import type { TrustStore } from './trust-store.js';
import type { ApprovalDecision } from './adapter-approvals.js';
import { coreMessage, strings, type CoreKey } from '../i18n/index.js';
import { AdapterProblem, problem, problemOf, renderProblem, type ProblemMessage } from './adapter-problem.js';

/** Status of an adapter as `aios/registry.info` shows it. */
export interface AdapterStatus {
  available: boolean;
  software_installed: boolean;
  software_running: boolean;
  /** Why it is unavailable, in English (the wire's words). */
  reason?: string;
  /** `reason` as a catalogue message, so a reader (the CLI) can say it in its user's language. */
  reason_message?: ProblemMessage;
  /** Set when an unsigned adapter was loaded in developer mode, or runs without a sandbox. */
  warning?: string;
  /** An MCP adapter's process runs without the sandbox (`adapters.unsandboxed: allow`). */
  unsandboxed?: boolean;
  /** `warning` as a catalogue message. */
  warning_message?: ProblemMessage;
  /** A new local adapter folder waiting for approval (`aios-device adapters approve`): verified, not started. */
  pending?: boolean;
}

/** A function of an adapter waiting for approval, as a person choosing its level sees it. */
export interface PendingFunction {
  id: string;
  name: string;
  /** The level the card claims (the effective level is never below it). */
  claimed_level?: PermissionLevel;
  /** The card's risk; none means destructive. */
  risk?: { read_only?: boolean; destructive?: boolean; idempotent?: boolean; physical?: boolean };
}

/** What an adapter waiting for approval shows: who signed it and its functions. */
export interface PendingApproval {
  /** The signing key id; null when unsigned (developer mode). */
  signer: string | null;
  /** Its functions, or null for an MCP server (its tools are listed once it runs, which needs the approval). */
  functions: PendingFunction[] | null;
}

/** The status fields that say why an adapter is unavailable: the English reason and its message. */
export function unavailableBecause(p: ProblemMessage): Pick<AdapterStatus, 'reason' | 'reason_message'> {
  return { reason: renderProblem(p, 'en'), reason_message: p };
}

/** The outcome of preparing one local adapter. */
export interface PreparedAdapter {
  card: AdapterCard | undefined;
  status: AdapterStatus;
  functions: FunctionDefinition<never, unknown>[];
  /** Runs the adapter code's dispose hook (when its code was loaded). */
  dispose?: () => Promise<void>;
  /** Verified key id, when signed. */
  kid?: string;
  /** The running MCP server of an `mcp` adapter (its functions change when its tools do). */
  mcp?: McpAdapter;
  /** Set while the adapter waits for approval. */
  pending?: PendingApproval;
  /** The approval it runs under (undefined when the registry does not ask for approvals). */
  approval?: ApprovalDecision;
}

/** Warning shown for an unsigned adapter loaded in developer mode. */
export const DEVELOPER_MODE_WARNING_KEY: CoreKey = 'core.adapter.developer_mode';
/** The warning's English text (logs, `status.warning`). */
export const DEVELOPER_MODE_WARNING = strings.render(coreMessage(DEVELOPER_MODE_WARNING_KEY), 'en');

/** True when the card's required software (if any) is installed, by `.desktop` file or executable. */
export async function softwareInstalled(card: AdapterCard | undefined, desktop: ReadonlyMap<string, DesktopEntry>): Promise<boolean> {
  const det = card?.requirements?.software?.detection;
  if (!card?.requirements?.software) return true;
  if (!det || (!det.desktop_file && !det.executable)) return true;
  if (det.desktop_file && desktop.has(det.desktop_file)) return true;
  if (det.executable && (await executableExists(det.executable))) return true;
  return false;
}

/**
 * The check a signed adapter folder must pass, here and in `aios-device adapter verify`: the card's
 * signature against the trust store, then the code it binds against the files. Throws with the reason.
 */
export async function verifySignedAdapter(dir: string, raw: unknown, trust: TrustStore): Promise<{ card: AdapterCard; kid: string; binding: CodeBinding; bytes: CodeBytes }> {
  let v: Awaited<ReturnType<typeof verifyCard>>;
  try {
    v = await verifyCard(raw, (k) => trust.resolve(k));
  } catch (e) {
    throw new AdapterProblem('core.adapter.signature_refused', { detail: (e as Error).message }, undefined, { cause: e });
  }
  if (!v.card.code) throw new AdapterProblem('core.adapter.no_code');
  const checked = await readCheckedCode(dir, v.card.code);
  if ('problem' in checked) throw new AdapterProblem('core.adapter.code_refused', { detail: checked.problem.said });
  return { card: v.card, kid: v.kid, binding: v.card.code, bytes: checked.bytes };
}

/** Verifies, checks and loads one candidate. */
export async function prepareLocalAdapter(
  cand: AdapterCandidate,
  /** `env` is asked for only when the adapter's code is loaded (it may create the adapter's data folder). */
  opts: {
    trust: TrustStore;
    developerMode: boolean;
    desktop: ReadonlyMap<string, DesktopEntry>;
    env: () => HandlerEnv;
    /** A private folder (0700) the checked code is copied into and loaded from. */
    codeDir: () => Promise<string>;
    /** MCP adapters may run without bubblewrap where it cannot run (admin config `adapters.unsandboxed: allow`). */
    allowUnsandboxed?: boolean;
    /** The level the user or admin chose for a function of this adapter (default `high`); used when `approval` is not asked. */
    chosenLevel?: (fn: string) => PermissionLevel | undefined;
    /**
     * The approval in force for this adapter as signed by `signer` (null: unsigned), or undefined while it
     * waits; its levels are the chosen ones. Without this function every adapter that verifies runs.
     */
    approval?: (signer: string | null) => ApprovalDecision | undefined;
  },
): Promise<PreparedAdapter> {
  const installed = await softwareInstalled(cand.card, opts.desktop);
  const refuse = (reason: ProblemMessage, card = cand.card): PreparedAdapter => ({
    card,
    status: { available: false, software_installed: installed, software_running: false, ...unavailableBecause(reason) },
    functions: [],
  });
  if (cand.error || !cand.card) return refuse(cand.problem ?? (cand.error ? problemOf(new Error(cand.error)) : problem('core.adapter.unreadable')));
  let card = cand.card;
  let binding: CodeBinding | undefined;
  let bytes: CodeBytes | undefined;
  let kid: string | undefined;
  let warning: string | undefined;
  if (cand.kind === 'card' && card.signature) {
    try {
      ({ card, kid, binding, bytes } = await verifySignedAdapter(cand.dir, cand.raw, opts.trust));
    } catch (e) {
      return refuse(problemOf(e));
    }
  } else {
    if (!opts.developerMode) return refuse(problem('core.adapter.not_signed'));
    const entry = card.code?.entry ?? cand.entry;
    if (!entry) return refuse(problem('core.adapter.no_entry_to_load'));
    try {
      ({ binding, bytes } = await readCodeBinding(cand.dir, entry));
    } catch (e) {
      return refuse(problemOf(e));
    }
    warning = DEVELOPER_MODE_WARNING;
  }
  const software = card.requirements?.software?.name;
  if (!installed) return refuse(software ? problem('core.adapter.requires_software', { software }) : problem('core.adapter.requires_unnamed'), card);
  const approval = opts.approval?.(kid ?? null);
  if (opts.approval && !approval) {
    // Verified, but nobody approved it yet: its code does not run and its functions are not offered.
    const functions: PendingFunction[] | null = card.mcp
      ? null
      : card.skills.map((s) => ({ id: s.id, name: s.name, ...(s.permission_level && { claimed_level: s.permission_level }), ...(s.risk && { risk: s.risk }) }));
    const out = refuse(problem('core.adapter.awaiting_approval', { id: cand.id }), card);
    out.status.pending = true;
    out.pending = { signer: kid ?? null, functions };
    if (kid) out.kid = kid;
    return out;
  }
  const chosenLevel = (fn: string): PermissionLevel | undefined => (approval ? approval.levels[fn] : opts.chosenLevel?.(fn));
  {
    const env = opts.env();
    const copy = await privateCopy({ id: cand.id, codeDir: await opts.codeDir(), binding, bytes });
    await mkdir(env.dataDir, { recursive: true, mode: 0o700 });
    const mcp = new McpAdapter({
      id: cand.id,
      name: card.adapter.name,
      version: card.adapter.version,
      // A JavaScript adapter is served by the project's host process; its `mcp` spec is unused.
      spec: card.mcp ?? { command: process.execPath, prefix: 'host' },
      ...(card.mcp ? {} : { host: { entry: binding.entry, skills: card.skills, adapter: card.adapter } }),
      codeDir: copy,
      signedFiles: new Set(Object.keys(binding.files)),
      dataDir: env.dataDir,
      allowUnsandboxed: opts.allowUnsandboxed === true,
      // The level a person chooses defaults to high: a third-party function is asked unless someone lowered it.
      level: (fn, claimed) => effectiveLevel(claimed, chosenLevel(fn)),
      log: env.log,
    });
    const dispose = () => mcp.stop().then(() => rm(copy, { recursive: true, force: true })).catch(() => {});
    try {
      const functions = await mcp.start();
      const status: AdapterStatus = { available: true, software_installed: installed, software_running: false };
      const warnings: ProblemMessage[] = [];
      if (warning) warnings.push(problem(DEVELOPER_MODE_WARNING_KEY));
      if (!mcp.sandboxed) {
        status.unsandboxed = true;
        warnings.push(problem('core.adapter.unsandboxed'));
      }
      if (warnings.length) Object.assign(status, { warning: renderProblem(warnings[0]!, 'en'), warning_message: warnings[0] });
      const out: PreparedAdapter = { card, status, functions, dispose, mcp };
      if (kid) out.kid = kid;
      if (approval) out.approval = approval;
      return out;
    } catch (e) {
      await dispose();
      // Verified and approved, but it did not start: who signed it and who approved it still hold, so a
      // person can approve it again (other levels) once it is fixed, and the reason is the start's.
      const out = refuse(problemOf(e), card);
      if (kid) out.kid = kid;
      if (approval) out.approval = approval;
      return out;
    }
  }
}
