/**
 * Builds Adapter Cards (PROTOCOL.md §7.1): the device's own card, whose skills are its registered functions,
 * and the reverse mapping from a third-party card's skills to full §4 descriptors.
 */
import { PROTOCOL_VERSION, type Descriptor } from '../protocol/messages.js';
import { DEFAULT_TIMEOUT_MAX_MS, DEFAULT_TIMEOUT_MS, withDescriptorDefaults, type DescriptorInput } from '../sdk/index.js';
import type { AdapterCard, AdapterInfo, CardSkill } from '../protocol/manifest-schemas.js';

/** What the device card says about the device itself. */
export interface DeviceCardMeta {
  /** Device id (`dev_…`); folded into the reverse-domain adapter id. */
  deviceId: string;
  deviceName: string;
  /** Client version. */
  version: string;
  /** The local endpoint's HTTP base URL (`http://127.0.0.1:PORT`). */
  http: string;
  homepage?: string;
}

/** Reverse-domain adapter id for a device id, e.g. `dev_01J` → `aios.device.dev-01j`. */
export function deviceAdapterId(deviceId: string): string {
  const slug = deviceId.toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+|-+$/g, '') || 'unknown';
  return `aios.device.${slug}`;
}

/** The device's unsigned card; sign it with `signCard`. Skills are the descriptors, sorted by id. */
export function buildDeviceCard(meta: DeviceCardMeta, descriptors: readonly Descriptor[]): AdapterCard {
  const http = meta.http.replace(/\/+$/, '');
  const adapter: AdapterInfo = {
    id: deviceAdapterId(meta.deviceId),
    name: meta.deviceName,
    description: `AIOS Device on ${meta.deviceName}: whitelisted functions on this machine.`,
    version: meta.version,
    protocol_version: PROTOCOL_VERSION,
    author: 'AIOS Device',
    license: 'Apache-2.0',
  };
  if (meta.homepage) adapter.homepage = meta.homepage;
  return {
    adapter,
    capabilities: { ...DEVICE_CAPABILITIES },
    skills: [...descriptors].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) as CardSkill[],
    authentication: { required: true, schemes: ['bearer'] },
    endpoints: { rpc: `${http}/rpc`, http, health: '/health', metrics: '/metrics' },
    extensions: [],
  };
}

/** What this agent's calls support (the device card's `capabilities`, and its built-in adapters'). */
export const DEVICE_CAPABILITIES = { streaming: false, batch_operations: false, async_tasks: true, push_notifications: true, state_transition_history: true } as const;

/** Timeouts a skill gets when its card does not say (the SDK's descriptor defaults). */
export const DEFAULT_SKILL_TIMEOUT_MS = DEFAULT_TIMEOUT_MS;
export const DEFAULT_SKILL_TIMEOUT_MAX_MS = DEFAULT_TIMEOUT_MAX_MS;

/**
 * A card skill as a full descriptor. Missing fields get the pessimistic defaults of §4, the same a
 * built-in function gets (`withDescriptorDefaults`, src/sdk/descriptor-defaults.ts): no `risk` (treated as
 * destructive, non-idempotent), `access: restricted`, `confirmation: policy`, not cancellable. The
 * version is the adapter's, and a maximum below the default timeout is raised to it.
 */
export function skillToDescriptor(skill: CardSkill, adapter: Pick<AdapterInfo, 'version'>): DescriptorInput {
  const timeout = skill.timeout_ms_default ?? DEFAULT_SKILL_TIMEOUT_MS;
  const d: DescriptorInput = withDescriptorDefaults({
    id: skill.id,
    name: skill.name,
    description: skill.description,
    version: skill.version ?? adapter.version,
    capability_type: skill.capability_type,
    access: skill.access,
    permission_level: skill.permission_level,
    confirmation: skill.confirmation,
    input_schema: skill.input_schema,
    output_schema: skill.output_schema,
    timeout_ms_default: timeout,
    timeout_ms_max: Math.max(timeout, skill.timeout_ms_max ?? DEFAULT_SKILL_TIMEOUT_MAX_MS),
    cancellable: skill.cancellable,
    locks: skill.locks,
  });
  if (skill.risk) d.risk = skill.risk;
  if (skill.examples) d.examples = skill.examples;
  return d;
}
