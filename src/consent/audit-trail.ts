/**
 * The audit trail as the dispatcher sees it: a CallObserver that records every finished call in the
 * audit log. A row that cannot be written is logged, never thrown into the call path.
 */
import type { Logger } from '../base/logger.js';
import type { CallObserver } from '../seams/call-seams.js';
import type { AuditLog } from './audit-log.js';

/** Records each finished call in `audit`. */
export function auditTrail(audit: Pick<AuditLog, 'record'>, log?: Logger): CallObserver {
  return {
    onFinished(entry) {
      try {
        audit.record(entry);
        // No argument summary here: the audit row has it, and `args` is a redacted log field anyway.
        log?.debug({ call_id: entry.outcome.call_id, function: entry.outcome.function, state: entry.outcome.state }, 'call audited');
      } catch (e) {
        log?.error({ err: (e as Error).message }, 'could not write the audit trail');
      }
    },
  };
}
