/**
 * The serial handler: talk to instruments on the ports the user granted (`grants.serial`). The engine
 * (engine/) holds the port pool, the read-until reader, modem lines and the listing logic; this module
 * and functions.ts are the glue to the SDK. See docs/handlers/serial.md.
 */
import { defineHandler } from '../../src/sdk/index.js';
import { realBinding } from './engine/binding.js';
import { DEFAULT_IDLE_CLOSE_MS, PortPool } from './engine/pool.js';
import { serialFunctions } from './functions.js';
import { normalizeSerialGrant, SerialGrantEntry, type SerialGrant } from './grant-kind.js';
import { Value } from '@sinclair/typebox/value';

/** Reads the handler's options (`handlers.serial.idle_close_ms`). */
function idleCloseMs(options: Record<string, unknown>): number {
  const v = options['idle_close_ms'];
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 600_000 ? v : DEFAULT_IDLE_CLOSE_MS;
}

/** The configured grants in the normal form (entries that fail the schema are skipped). */
function grantsOf(entries: readonly unknown[] | undefined): SerialGrant[] {
  return (entries ?? []).filter((e) => Value.Check(SerialGrantEntry, e)).map((e) => normalizeSerialGrant(e as SerialGrantEntry));
}

export default defineHandler({
  name: 'serial',
  create(env) {
    const pool = new PortPool({ binding: realBinding, idleCloseMs: idleCloseMs(env.options) });
    const grants = grantsOf(env.grants.serial);
    return serialFunctions({ pool, binding: realBinding, grants: () => grants });
  },
});
