/**
 * IPP numbers and their registered names: operation ids, status codes (RFC 8011 §5.4.15 and the CUPS
 * extensions in use), job and printer states, orientations. Kept apart from the codec, which is syntax only.
 */

/** Operation ids used by this handler (RFC 8011 §5.4.15; CUPS-Get-Printers from the CUPS IPP extensions). */
export const OP = {
  'Print-Job': 0x0002,
  'Validate-Job': 0x0004,
  'Cancel-Job': 0x0008,
  'Get-Job-Attributes': 0x0009,
  'Get-Jobs': 0x000a,
  'Get-Printer-Attributes': 0x000b,
  'CUPS-Get-Default': 0x4001,
  'CUPS-Get-Printers': 0x4002,
} as const;

/** An operation this handler sends. */
export type OpName = keyof typeof OP;

/** Status codes by number (RFC 8011 §5.4.15 / IANA IPP registry). */
export const STATUS_NAMES: Readonly<Record<number, string>> = {
  0x0000: 'successful-ok',
  0x0001: 'successful-ok-ignored-or-substituted-attributes',
  0x0002: 'successful-ok-conflicting-attributes',
  0x0400: 'client-error-bad-request',
  0x0401: 'client-error-forbidden',
  0x0402: 'client-error-not-authenticated',
  0x0403: 'client-error-not-authorized',
  0x0404: 'client-error-not-possible',
  0x0405: 'client-error-timeout',
  0x0406: 'client-error-not-found',
  0x0407: 'client-error-gone',
  0x0408: 'client-error-request-entity-too-large',
  0x0409: 'client-error-request-value-too-long',
  0x040a: 'client-error-document-format-not-supported',
  0x040b: 'client-error-attributes-or-values-not-supported',
  0x040c: 'client-error-uri-scheme-not-supported',
  0x040d: 'client-error-charset-not-supported',
  0x040e: 'client-error-conflicting-attributes',
  0x040f: 'client-error-compression-not-supported',
  0x0410: 'client-error-compression-error',
  0x0411: 'client-error-document-format-error',
  0x0412: 'client-error-document-access-error',
  0x0500: 'server-error-internal-error',
  0x0501: 'server-error-operation-not-supported',
  0x0502: 'server-error-service-unavailable',
  0x0503: 'server-error-version-not-supported',
  0x0504: 'server-error-device-error',
  0x0505: 'server-error-temporary-error',
  0x0506: 'server-error-not-accepting-jobs',
  0x0507: 'server-error-busy',
  0x0508: 'server-error-job-canceled',
  0x0509: 'server-error-multiple-document-jobs-not-supported',
};

/** The registered name of a status code, or its hex form when unregistered. */
export function statusName(code: number): string {
  return STATUS_NAMES[code] ?? `0x${code.toString(16).padStart(4, '0')}`;
}

/** True for the successful-* range (0x0000–0x00ff). */
export function isSuccess(code: number): boolean {
  return code >= 0 && code <= 0xff;
}

/** job-state (RFC 8011 §5.3.7), reported verbatim so that a caller never reads more than the printer said. */
export const JOB_STATES: Readonly<Record<number, JobState>> = {
  3: 'pending',
  4: 'pending-held',
  5: 'processing',
  6: 'processing-stopped',
  7: 'canceled',
  8: 'aborted',
  9: 'completed',
};

/** A job's state as IPP names it. */
export type JobState = 'pending' | 'pending-held' | 'processing' | 'processing-stopped' | 'canceled' | 'aborted' | 'completed';

/** States after which a job never changes. */
export const TERMINAL_JOB_STATES: readonly JobState[] = ['canceled', 'aborted', 'completed'];

/** printer-state (RFC 8011 §5.4.11). */
export const PRINTER_STATES: Readonly<Record<number, 'idle' | 'processing' | 'stopped'>> = { 3: 'idle', 4: 'processing', 5: 'stopped' };

/** orientation-requested (RFC 8011 §5.2.10). */
export const ORIENTATIONS = { portrait: 3, landscape: 4, 'reverse-landscape': 5, 'reverse-portrait': 6 } as const;

/** An orientation name. */
export type Orientation = keyof typeof ORIENTATIONS;

/** Names of enum values by attribute, for the plain view of printer attributes. */
export const ENUM_NAMES: Readonly<Record<string, Readonly<Record<number, string>>>> = {
  'printer-state': PRINTER_STATES,
  'job-state': JOB_STATES,
  'orientation-requested-default': Object.fromEntries(Object.entries(ORIENTATIONS).map(([k, n]) => [n, k])),
  'orientation-requested-supported': Object.fromEntries(Object.entries(ORIENTATIONS).map(([k, n]) => [n, k])),
  'operations-supported': Object.fromEntries(Object.entries(OP).map(([k, n]) => [n, k])),
  'print-quality-default': { 3: 'draft', 4: 'normal', 5: 'high' },
  'print-quality-supported': { 3: 'draft', 4: 'normal', 5: 'high' },
};
