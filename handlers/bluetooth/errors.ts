/**
 * Typed Bluetooth failures, with no SDK dependency: the loader, the pool and the operations throw
 * `BleError`; the functions file maps each to its wire error in one place (`toWireError` there).
 */

/** What went wrong, in the handler's own words; the glue turns each into a PROTOCOL.md §2 type. */
export type BleFault =
  /** no usable adapter: noble failed to load (no Bluetooth in the kernel, no driver), or the adapter lacks LE */
  | 'no_adapter'
  /** @abandonware/noble is not installed (it is an optional dependency) */
  | 'not_installed'
  /** the adapter is switched off */
  | 'powered_off'
  /** the adapter is resetting or never said what state it is in */
  | 'not_ready'
  /** the OS refused Bluetooth to this program (macOS privacy setting, Linux capabilities) */
  | 'os_refused'
  /** the peripheral dropped the connection during the call */
  | 'disconnected'
  /** the peripheral was not seen advertising in time */
  | 'not_found'
  /** the peripheral refused the connection or the connection attempt failed */
  | 'connect_failed'
  /** the service or characteristic does not exist on the peripheral */
  | 'no_such_characteristic'
  /** the characteristic does not support the requested operation (read, write, notify) */
  | 'not_supported';

/** A typed Bluetooth failure; `message` is one plain sentence with no device data. */
export class BleError extends Error {
  constructor(
    readonly fault: BleFault,
    message: string,
  ) {
    super(message);
    this.name = 'BleError';
  }
}
