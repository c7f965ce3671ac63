/**
 * MCP tools from device function descriptors (docs/mcp.md): tool names that every host accepts and that
 * map back to (device, function), annotations from the descriptor's risk, titles that name the device.
 * Pure functions: no SDK import, so the bridge loads the SDK only on the first MCP request.
 */
import type { Descriptor } from '../../protocol/messages.js';
import { strings, coreMessage, type Locale } from '../../i18n/index.js';
import type { DeviceRecord } from '../store.js';

/** The strictest common host rule (MCP itself allows `.` and 128 characters). */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** A device handle as the bridge assigns them (`d1`, `d2`, …): never contains `-`. */
const HANDLE_PATTERN = /^d[1-9][0-9]*$/;

/** The MCP tool shape the bridge lists (the SDK's `Tool`, written out so this file needs no SDK). */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown> & { type: 'object' };
  outputSchema?: Record<string, unknown> & { type: 'object' };
  annotations: { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };
}

/** A function id as a per-device tool name: `.` → `-` (function ids never contain `-`). */
export function deviceToolName(functionId: string): string {
  return functionId.replaceAll('.', '-');
}

/** A function as a workspace tool name: `<handle>-<device tool name>`. */
export function workspaceToolName(handle: string, functionId: string): string {
  return `${handle}-${deviceToolName(functionId)}`;
}

/** The function id a per-device tool name stands for, or undefined when the name cannot be one. */
export function functionOfDeviceTool(name: string): string | undefined {
  if (!TOOL_NAME_PATTERN.test(name)) return undefined;
  return name.replaceAll('-', '.');
}

/** The handle and function id a workspace tool name stands for (the handle has no `-`: the first one ends it). */
export function functionOfWorkspaceTool(name: string): { handle: string; functionId: string } | undefined {
  if (!TOOL_NAME_PATTERN.test(name)) return undefined;
  const i = name.indexOf('-');
  if (i <= 0) return undefined;
  const handle = name.slice(0, i);
  const functionId = functionOfDeviceTool(name.slice(i + 1));
  return HANDLE_PATTERN.test(handle) && functionId ? { handle, functionId } : undefined;
}

/** Capability types whose functions reach beyond the device by network (documented in docs/mcp.md). */
const NETWORK_CAPABILITIES: ReadonlySet<string> = new Set(['api', 'network', 'web']);

/**
 * MCP annotations from the descriptor's risk. A descriptor without `risk` is pessimistic (§4): not read-only,
 * destructive, not idempotent, open world. `openWorldHint`: the function touches the physical world
 * (`risk.physical`) or reaches over the network (its capability type is one of NETWORK_CAPABILITIES).
 */
export function annotationsFor(d: Descriptor, title: string): McpTool['annotations'] {
  const r = d.risk;
  return {
    title,
    readOnlyHint: r?.read_only ?? false,
    destructiveHint: r?.destructive ?? true,
    idempotentHint: r?.idempotent ?? false,
    openWorldHint: r ? r.physical || NETWORK_CAPABILITIES.has(d.capability_type) : true,
  };
}

/** The name a person knows the device by. */
export function deviceLabel(d: Pick<DeviceRecord, 'name' | 'device_id'>): string {
  return d.name?.trim() || d.device_id;
}

const DIALECT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/**
 * A descriptor schema as an MCP tool schema: MCP requires `type: "object"`; a top-level `$schema` naming
 * 2020-12 is dropped (2020-12 is MCP's default dialect, and a client's draft-07 validator refuses the URI).
 */
function objectSchema(s: Record<string, unknown>): (Record<string, unknown> & { type: 'object' }) | undefined {
  if (s['type'] !== 'object') return undefined;
  const { $schema, ...rest } = s;
  return ($schema === undefined || $schema === DIALECT_2020_12 ? rest : s) as Record<string, unknown> & { type: 'object' };
}

/** Why a function is not listed, for the log. */
export interface LeftOut {
  device_id: string;
  function: string;
  reason: string;
}

/**
 * One tool for a function of a device, or the reason it is left out. `offline`: the device has no session;
 * its tools say so first in their description.
 */
export function toolFor(device: DeviceRecord, d: Descriptor, name: string, offline: boolean, locale: Locale): McpTool | LeftOut {
  if (!TOOL_NAME_PATTERN.test(name)) return { device_id: device.device_id, function: d.id, reason: `the tool name ${name} would not match ${TOOL_NAME_PATTERN.source}` };
  const inputSchema = objectSchema(d.input_schema);
  if (!inputSchema) return { device_id: device.device_id, function: d.id, reason: 'its input schema is not of type object, which MCP requires' };
  const outputSchema = objectSchema(d.output_schema);
  const label = deviceLabel(device);
  const title = strings.render(coreMessage('core.mcp.tool_title', { device: label, name: d.name }), locale);
  const description = offline ? strings.render(coreMessage('core.mcp.offline_description', { device: label, description: d.description }), locale) : d.description;
  return { name, title, description, inputSchema, ...(outputSchema ? { outputSchema } : {}), annotations: annotationsFor(d, title) };
}

export function isLeftOut(t: McpTool | LeftOut): t is LeftOut {
  return 'reason' in t;
}
