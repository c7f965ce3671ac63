/**
 * One adapter as the registry holds it, how the registry tells that it changed, and the change it announces:
 * the shape shared by the catalogue (registry.ts), its remote adapters (remote-store.ts) and its
 * `aios/registry.*` methods (registry-rpc.ts).
 */
import { createHash } from 'node:crypto';
import { jcs } from '../protocol/hash.js';
import type { FunctionDefinition } from '../sdk/index.js';
import type { AdapterCard } from '../protocol/manifest-schemas.js';
import type { AdapterStatus, PendingApproval, PendingFunction } from './local-adapter.js';
import type { ApprovalDecision } from './adapter-approvals.js';

/** How an adapter came to be known. */
export type AdapterKind = 'builtin' | 'local' | 'remote' | 'inferred';

/** One adapter as the registry holds it. */
export interface AdapterEntry {
  id: string;
  kind: AdapterKind;
  card: Omit<AdapterCard, 'signature'>;
  status: AdapterStatus;
  functions: FunctionDefinition<never, unknown>[];
  source: { kind: AdapterKind; path?: string; url?: string };
  /** Changes when anything a user would notice changes. */
  fingerprint: string;
  /** Fingerprint of the inputs (manifest, files, environment) that produced it; reused when unchanged. */
  inputs?: string;
  /** Executable to look for when asked whether the software runs. */
  executable?: string;
  /**
   * The loaded code's dispose hook (local adapters); run once no entry holds it any more: the entry was
   * replaced or removed, refused (an entry refused for a clash gives its hook up), or the registry stopped.
   */
  dispose?: () => Promise<void>;
  /** A local adapter's signing key id (null: unsigned), once its signature verified. */
  signer?: string | null;
  /** Set while a local adapter waits for approval. */
  pending?: PendingApproval;
  /** The approval a local adapter runs under (when the registry asks for approvals). */
  approval?: ApprovalDecision;
}

/** An adapter waiting for approval, as `aios/registry.pending` lists it. */
export interface PendingAdapter {
  id: string;
  name: string;
  version: string;
  folder: string;
  signer: string | null;
  /** Null for an MCP server: its tools are listed once it runs. */
  functions: PendingFunction[] | null;
}

/** `{ id, name }` pairs of a change. */
export interface IdName {
  id: string;
  name: string;
}

/** What the 'changed' event carries: function-level lists (for tools_changed) and adapter-level lists. */
export interface RegistryChange {
  added: IdName[];
  removed: IdName[];
  updated: IdName[];
  adapters: { added: IdName[]; removed: IdName[]; updated: IdName[] };
}

/** A stable digest of a value (its JCS form): what an entry's fingerprint and inputs are made of. */
export const hash = (v: unknown): string => createHash('sha256').update(jcs(v)).digest('base64url');
