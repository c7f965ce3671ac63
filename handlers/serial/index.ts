/**
 * The serial handler: talk to instruments on the ports the user granted (`grants.serial`). The engine
 * (engine/) holds the port pool, the read-until reader, modem lines and the listing logic; this module,
 * functions.ts and grant-kind.ts are the glue to the SDK. See docs/handlers/serial.md.
 */
import { defineHandler } from '../../src/sdk/index.js';
import { DEFAULT_IDLE_CLOSE_MS, PortPool } from './engine/pool.js';
import { serialFunctions } from './functions.js';
import { serialGrants } from './grant-kind.js';
import { binding } from './native.js';

/** Reads the handler's options (`handlers.serial.idle_close_ms`). */
function idleCloseMs(options: Record<string, unknown>): number {
  const v = options['idle_close_ms'];
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 600_000 ? v : DEFAULT_IDLE_CLOSE_MS;
}

export default defineHandler({
  name: 'serial',
  title: 'Serial ports',
  description: 'Talk to instruments on serial ports the user granted (scales, barcode readers, lab instruments, PLCs), one call per port at a time.',
  grantKinds: [serialGrants],
  create(env) {
    const pool = new PortPool({ binding, idleCloseMs: idleCloseMs(env.options) });
    return {
      functions: serialFunctions({ pool, binding, grants: env.grants }),
      // Ports are released when the agent stops and when the user pauses (other programs may want them).
      dispose: () => pool.dispose(),
      onPause: () => pool.closeAll(),
    };
  },
});
