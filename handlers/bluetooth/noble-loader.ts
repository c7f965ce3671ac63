/**
 * Loads noble lazily, on the first call that needs the adapter (never at handler creation: on a machine
 * without Bluetooth in the kernel `require('@abandonware/noble')` throws EAFNOSUPPORT, and the agent must
 * still start and list the functions). No SDK dependency: the platform binding's import is passed in
 * (index.ts gives the kit's `optionalNative`, which turns its failures into typed wire errors).
 *
 * Bindings:
 * - `default`: noble's own choice for the platform (HCI socket on Linux, CoreBluetooth on macOS, WinRT on
 *   Windows), exactly what `require('@abandonware/noble')` gives.
 * - `websocket`: noble's WebSocket binding (what `NOBLE_WEBSOCKET=1` selects), which talks to
 *   ws://localhost:2846. TEST ONLY: the tests and the bench run a protocol simulator there (no radio).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { BleError } from './errors.js';
import type { Noble } from './noble-types.js';
import { quietNobleConsole, type NobleLineSink } from './quiet-console.js';

const require = createRequire(import.meta.url);

/** Which noble binding to use (handler option `binding`). */
export type BindingChoice = 'default' | 'websocket';

/** A loaded noble and how to let go of it. */
export interface LoadedNoble {
  readonly noble: Noble;
  /** True once the binding can no longer work (the WebSocket binding's socket closed): load again. */
  dead(): boolean;
  close(): void;
}

interface WsBindings {
  _ws: { close(): void; readyState: number; once(ev: string, cb: () => void): void };
}

/** Maps what loading the WebSocket binding threw to a typed failure (message with the fix, no private data). */
export function loadFailure(e: unknown): BleError {
  const err = e as NodeJS.ErrnoException;
  const code = err?.code ?? '';
  const msg = String(err?.message ?? e);
  if (code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND') {
    return new BleError('not_installed', 'Bluetooth support (@abandonware/noble) is not installed with this agent; reinstall it with its optional dependencies.');
  }
  if (code === 'EPERM' || code === 'EACCES' || /EPERM|EACCES|Operation not permitted/.test(msg)) {
    return new BleError('os_refused', 'The operating system refused Bluetooth to this program; on Linux give node the cap_net_raw and cap_net_admin capabilities (see docs/handlers/bluetooth.md).');
  }
  return new BleError('no_adapter', 'This device has no usable Bluetooth adapter (the system reports none); plug one in or enable Bluetooth, then try again.');
}

/**
 * True when this Linux kernel has no Bluetooth at all (no `/sys/class/bluetooth`: no adapter ever
 * registered, and the subsystem is not loaded) while noble itself is installed: then noble would load
 * only to find no adapter (or fail with EAFNOSUPPORT), ≈ 150–200 ms of import for an answer known
 * without it. An adapter that appears later creates the folder; a system without `/sys/class` (some
 * containers) and every other platform are not judged here.
 */
export function linuxWithoutBluetooth(): boolean {
  if (process.platform !== 'linux' || !existsSync('/sys/class') || existsSync('/sys/class/bluetooth')) return false;
  try {
    require.resolve('@abandonware/noble');
    return true;
  } catch {
    // Not installed: the load path says so (`not_installed`).
    return false;
  }
}

/** Loads noble with the chosen binding; `platform` imports the default one (it throws what it throws). */
export async function loadNoble(binding: BindingChoice, lines: NobleLineSink, platform: () => Promise<Noble>): Promise<LoadedNoble> {
  // Before the import: noble's bindings print from their constructors.
  quietNobleConsole(lines);
  if (binding === 'websocket') {
    try {
      const Bindings = require('@abandonware/noble/lib/websocket/bindings') as new () => WsBindings;
      const withBindings = require('@abandonware/noble/with-bindings') as (b: unknown) => Noble;
      const b = new Bindings();
      let closed = false;
      b._ws.once('close', () => (closed = true));
      return { noble: withBindings(b), dead: () => closed, close: () => b._ws.close() };
    } catch (e) {
      throw loadFailure(e);
    }
  }
  // noble's index builds one instance for the process; it is never closed (other handlers may not share it,
  // but the next handler instance in this process gets the same one).
  return { noble: await platform(), dead: () => false, close: () => {} };
}
