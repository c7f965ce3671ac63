/** Shared helpers for the consent tests: temp dirs and a descriptor factory. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Descriptor, PermissionLevel } from '../../src/protocol/messages.js';
import type { ConsentRequest } from '../../src/seams/call-seams.js';

/** A fresh temp dir, removed by the returned cleanup. */
export function tempDir(prefix = 'aios-consent-'): { dir: string; cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** A descriptor with the given level (safe, read-only risk unless overridden). */
export function descriptor(id: string, level: PermissionLevel, extra: Partial<Descriptor> = {}): Descriptor {
  return {
    id,
    name: `Do ${id}`,
    description: 'test',
    version: '1.0.0',
    capability_type: 'device',
    access: 'restricted',
    permission_level: level,
    risk: { read_only: true, destructive: false, idempotent: true, physical: false },
    confirmation: 'policy',
    input_schema: { type: 'object' },
    output_schema: { type: 'object' },
    timeout_ms_default: 1000,
    timeout_ms_max: 2000,
    cancellable: true,
    locks: [],
    ...extra,
  };
}

let n = 0;
/** A consent request for a call of `d`. */
export function request(d: Descriptor, extra: Partial<ConsentRequest> = {}): ConsentRequest {
  return {
    callId: `call-${++n}`,
    descriptor: d,
    args: { path: '/srv/out/report.docx' },
    summary: `Overwrite report.docx in out (14 KB)`,
    resource: 'files:/srv/out',
    requester: { kind: 'agent', id: 'agt_1', name: 'Front-desk assistant' },
    workspaceId: 'ws_demo',
    userId: 'usr_demo',
    timeoutMs: 60_000,
    ...extra,
  };
}
