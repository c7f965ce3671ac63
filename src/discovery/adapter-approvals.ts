/**
 * Which local adapters may run, and at which levels (issue 35): a new adapter folder waits for approval.
 * The administrator approves in the agent config (`adapters.approved: { <id>: { levels? } }`, which wins);
 * a person approves with `aios-device adapters approve <id> [--level <fn>=<level>…]`, kept in
 * `<data_dir>/adapter-approvals.json`. A person's approval holds for the signer it was given for: the same
 * id signed by another key (or unsigned) waits again. The file is written whole (temp file + rename); a
 * file that cannot be read or is not valid is an error, never overwritten and never read as "nothing
 * approved yet" by an edit.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { PermissionLevel } from '../protocol/messages.js';
import { schemaValidator } from '../protocol/schema-validator.js';
import { writeJsonFile } from '../base/json-file.js';
import { AdapterProblem, problemOf, type ProblemMessage } from './adapter-problem.js';

/** The file's name in the agent's data directory. */
export const APPROVALS_FILE = 'adapter-approvals.json';

/** `<dataDir>/adapter-approvals.json`. */
export function approvalsFile(dataDir: string): string {
  return join(dataDir, APPROVALS_FILE);
}

const ApprovalRecordSchema = Type.Object(
  {
    /** The key id the adapter was signed with when approved; null for an unsigned one (developer mode). */
    signer: Type.Union([Type.String(), Type.Null()]),
    levels: Type.Optional(Type.Record(Type.String(), PermissionLevel)),
    approved_at: Type.String(),
  },
  { additionalProperties: false },
);
/** The approvals file (its schema is precompiled at build time, src/kit/precompile.ts). */
export const ApprovalsFileSchema = Type.Object({ adapters: Type.Record(Type.String(), ApprovalRecordSchema) }, { additionalProperties: false });

/** One person's approval of one adapter. */
export interface ApprovalRecord {
  signer: string | null;
  levels?: Record<string, PermissionLevel>;
  approved_at: string;
}

/** An approval in force: who gave it and the levels chosen (functions not named: `high`). */
export interface ApprovalDecision {
  by: 'admin' | 'user';
  levels: Record<string, PermissionLevel>;
}

/** The admin config's `adapters.approved`. */
export type AdminApprovals = Record<string, { levels?: Record<string, PermissionLevel> }>;

/** Reads the approvals file: none when it does not exist; throws AdapterProblem when it cannot be read or is not valid. */
export async function readApprovals(file: string): Promise<Record<string, ApprovalRecord>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new AdapterProblem('core.adapter.approvals_unreadable', { file, detail: (e as Error).message }, undefined, { cause: e });
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new AdapterProblem('core.adapter.approvals_not_json', { file, detail: (e as Error).message }, undefined, { cause: e });
  }
  const violations = schemaValidator.check(ApprovalsFileSchema, v);
  if (violations.length) throw new AdapterProblem('core.adapter.approvals_invalid', { file }, violations);
  return (v as { adapters: Record<string, ApprovalRecord> }).adapters;
}

/** The admin's and the person's approvals, as the registry asks them. */
export class AdapterApprovals {
  private user: Record<string, ApprovalRecord> = {};
  /** Why the file could not be used at the last reload (then nothing a person approved counts). */
  problem: ProblemMessage | undefined;
  /** Edits of the file, one at a time. */
  private edits: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: { file: string; admin?: AdminApprovals | undefined }) {}

  get file(): string {
    return this.opts.file;
  }

  /** Reads the file again (before every scan of the adapter folders). A bad file counts as no approvals, and is kept as `problem`. */
  async reload(): Promise<void> {
    try {
      this.user = await readApprovals(this.opts.file);
      this.problem = undefined;
    } catch (e) {
      this.user = {};
      this.problem = problemOf(e);
    }
  }

  /** True when the admin config approves the adapter (then its levels are the admin's, and a person cannot change them). */
  byAdmin(id: string): boolean {
    return Object.hasOwn(this.opts.admin ?? {}, id);
  }

  /** The approval in force for an adapter signed by `signer` (null: unsigned), or undefined while it waits. */
  decision(id: string, signer: string | null): ApprovalDecision | undefined {
    const admin = this.opts.admin?.[id];
    if (admin) return { by: 'admin', levels: { ...(admin.levels ?? {}) } };
    const rec = Object.hasOwn(this.user, id) ? this.user[id] : undefined;
    if (rec && rec.signer === signer) return { by: 'user', levels: { ...(rec.levels ?? {}) } };
    return undefined;
  }

  /** What the decision for `id` depends on (part of a scan's inputs: a change reloads the adapter). */
  inputsOf(id: string): unknown {
    return { admin: this.opts.admin?.[id] ?? null, user: Object.hasOwn(this.user, id) ? this.user[id] : null };
  }

  /** Records a person's approval (replacing an earlier one of the same adapter); throws when the file cannot be used. */
  approve(id: string, signer: string | null, levels: Record<string, PermissionLevel>): Promise<ApprovalRecord> {
    const run = this.edits.then(async () => {
      const all = await readApprovals(this.opts.file);
      const rec: ApprovalRecord = { signer, ...(Object.keys(levels).length ? { levels } : {}), approved_at: new Date().toISOString() };
      await mkdir(dirname(this.opts.file), { recursive: true, mode: 0o700 });
      await writeJsonFile(this.opts.file, { adapters: { ...all, [id]: rec } }, 0o600);
      this.user = { ...all, [id]: rec };
      this.problem = undefined;
      return rec;
    });
    this.edits = run.catch(() => undefined);
    return run;
  }
}
