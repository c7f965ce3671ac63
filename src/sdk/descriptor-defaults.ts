/**
 * The pessimistic defaults of a function descriptor (protocol.md §4): what a function gets for each field
 * its author leaves out, whether it is a built-in handler's (`defineFunction`) or a third-party adapter's
 * card skill (`skillToDescriptor`). Each default asks for more care, not less: no `risk` (treated as
 * destructive and not idempotent), reachable beyond the device (`api`), restricted, confirmed by policy,
 * not cancellable.
 */
import type { Descriptor } from '../protocol/messages.js';

/** The fields an author must decide; every other field has a default. */
export type DecidedField = 'id' | 'name' | 'permission_level';

/** A descriptor as an author may write it: the decided fields, and any others that differ from the defaults. */
export type DescriptorDraft = Pick<Descriptor, DecidedField> & Partial<Omit<Descriptor, DecidedField | 'descriptor_hash'>>;

/** How long a call may run by default, and at most when the descriptor gives no maximum (ms). */
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_TIMEOUT_MAX_MS = 120_000;

/** The defaults for the fields a draft may leave out (`risk` and `examples` stay absent). */
export const DESCRIPTOR_DEFAULTS = {
  description: '',
  version: '1.0.0',
  capability_type: 'api',
  access: 'restricted',
  confirmation: 'policy',
  input_schema: { type: 'object' },
  output_schema: {},
  timeout_ms_default: DEFAULT_TIMEOUT_MS,
  cancellable: false,
  locks: [],
} as const satisfies Partial<Descriptor>;

/** The full descriptor (without its hash) of a draft: what it says, and the defaults for the rest. */
export function withDescriptorDefaults(d: DescriptorDraft): Omit<Descriptor, 'descriptor_hash'> {
  const given = Object.fromEntries(Object.entries(d).filter(([, v]) => v !== undefined)) as DescriptorDraft;
  const timeout = given.timeout_ms_default ?? DESCRIPTOR_DEFAULTS.timeout_ms_default;
  return {
    ...DESCRIPTOR_DEFAULTS,
    // Fresh objects: a descriptor is the function's own, never shared with another's.
    input_schema: { ...DESCRIPTOR_DEFAULTS.input_schema },
    output_schema: {},
    locks: [],
    ...given,
    timeout_ms_default: timeout,
    // Left out, the maximum is never below the default (that would refuse every call asking for the default).
    timeout_ms_max: given.timeout_ms_max ?? Math.max(timeout, DEFAULT_TIMEOUT_MAX_MS),
  };
}
