/**
 * Bluetooth UUIDs in the one form noble uses: lower-case hex without dashes, 16-bit and 32-bit SIG UUIDs
 * short ("181a"), everything else 32 hex digits. Grants, filters and results all go through `normUuid`,
 * so "181A", "0x181a" and "0000181a-0000-1000-8000-00805f9b34fb" name the same service.
 */

import { createRequire } from 'node:module';

const BASE_TAIL = '00001000800000805f9b34fb';

/** The JSON Schema pattern of a UUID as callers may write it. */
export const UUID_PATTERN = '^(0[xX])?([0-9a-fA-F]{4}|[0-9a-fA-F]{8}|[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$';

/** Normalises a UUID; returns undefined when it is not one. */
export function normUuid(u: string): string | undefined {
  let s = u.trim().toLowerCase();
  if (s.startsWith('0x')) s = s.slice(2);
  if (s.includes('-')) {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(s)) return undefined;
    s = s.replace(/-/g, '');
  }
  if (/^[0-9a-f]{4}$/.test(s)) return s;
  if (/^[0-9a-f]{8}$/.test(s)) return s.startsWith('0000') ? s.slice(4) : s;
  if (!/^[0-9a-f]{32}$/.test(s)) return undefined;
  if (s.endsWith(BASE_TAIL)) {
    const short = s.slice(0, 8);
    return short.startsWith('0000') ? short.slice(4) : short;
  }
  return s;
}

/**
 * Normalises a peripheral id: lower case without `:` or `-`. noble's id on Linux is the address without
 * colons, so a grant may name "AA:BB:CC:DD:EE:FF" or "aabbccddeeff"; on macOS it is a 32-digit UUID.
 */
export function normPeripheralId(id: string): string {
  return id.trim().toLowerCase().replace(/[:-]/g, '');
}

const require = createRequire(import.meta.url);
let names: Record<string, { name?: string }> | undefined;

/**
 * The SIG name of a characteristic or service UUID ("Temperature"), from noble's own tables (plain JSON
 * files: reading them never loads the native binding), for prompts; undefined when unknown.
 */
export function gattName(uuid: string): string | undefined {
  if (!names) {
    try {
      names = {
        ...(require('@abandonware/noble/lib/services.json') as Record<string, { name?: string }>),
        ...(require('@abandonware/noble/lib/characteristics.json') as Record<string, { name?: string }>),
      };
    } catch {
      names = {};
    }
  }
  return names[uuid]?.name;
}
