/**
 * The exit codes of the commands that call the bridge (`invoke`, `cancel`, `functions`…), documented in
 * docs/cli.md.
 */
/** Exit code of `invoke` by the call's state. */
export const EXIT_BY_STATE: Record<string, number> = { completed: 0, failed: 1, rejected: 2, cancelled: 3, expired: 4, unknown: 5 };
/** Exit code when the call is not finished when `invoke` stops waiting. */
export const EXIT_PENDING = 6;
/** Exit code when the call completed but its output breaks the function's output_schema (a handler defect). */
export const EXIT_OUTPUT_INVALID = 7;
/** Exit code when the device refused the call as a contract error (PROTOCOL.md §2: the runtime's request was wrong, not the execution). */
export const EXIT_CONTRACT_ERROR = 8;
/** The contract errors the device reports that exit with EXIT_CONTRACT_ERROR instead of 1. */
export const CONTRACT_ERRORS: ReadonlySet<string> = new Set(['unknown_function', 'invalid_arguments', 'function_changed']);
/** Exit code of `invoke` for a finished call: by its state, 8 for a device-reported contract error. */
export function exitForOutcome(o: { state: string; error?: { type: string } | null }): number {
  if (o.state === 'failed' && o.error && CONTRACT_ERRORS.has(o.error.type)) return EXIT_CONTRACT_ERROR;
  return EXIT_BY_STATE[o.state] ?? 1;
}
/** Exit code when the bridge refused the request (HTTP error). */
export const EXIT_BRIDGE_ERROR = 10;
/** Exit code when the bridge could not be reached at all. */
export const EXIT_BRIDGE_UNREACHABLE = 11;
/** Exit code for usage and config errors. */
export const EXIT_USAGE = 64;
