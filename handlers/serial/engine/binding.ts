/**
 * The slice of serialport's bindings layer the engine uses (structurally the same as
 * `@serialport/bindings-interface`), and the lazy loader of the real one. Tests hand the engine a fake
 * only for logic that no pseudo-terminal can exercise (modem lines, listing other platforms).
 */
import { SerialFault } from './faults.js';

/** One port as the bindings list it (only `path` is guaranteed). */
export interface PortInfo {
  path: string;
  manufacturer?: string | undefined;
  serialNumber?: string | undefined;
  pnpId?: string | undefined;
  locationId?: string | undefined;
  productId?: string | undefined;
  vendorId?: string | undefined;
}

/** Settings the bindings open a port with. */
export interface OpenOptions {
  path: string;
  baudRate: number;
  dataBits?: 5 | 6 | 7 | 8;
  stopBits?: 1 | 1.5 | 2;
  parity?: string;
  rtscts?: boolean;
  xon?: boolean;
  xoff?: boolean;
  lock?: boolean;
  hupcl?: boolean;
}

/** Modem control lines to set; the bindings set every flag on each call (omitted ones to defaults). */
export interface SetFlags {
  brk?: boolean;
  dtr?: boolean;
  rts?: boolean;
  cts?: boolean;
  dsr?: boolean;
}

/** Modem status lines. */
export interface StatusLines {
  cts: boolean;
  dsr: boolean;
  dcd: boolean;
}

/** An open port. An in-flight read or write rejects with `canceled: true` when the port is closed. */
export interface BindingPort {
  readonly isOpen: boolean;
  read(buffer: Buffer, offset: number, length: number): Promise<{ buffer: Buffer; bytesRead: number }>;
  write(buffer: Buffer): Promise<void>;
  set(flags: SetFlags): Promise<void>;
  get(): Promise<StatusLines>;
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** Lists and opens ports. */
export interface Binding {
  list(): Promise<PortInfo[]>;
  open(options: OpenOptions): Promise<BindingPort>;
}

let loaded: Promise<Binding> | undefined;

/**
 * The platform's real binding (serialport's native module), loaded on first use so that a machine
 * where it cannot load still runs the agent; the functions then answer `device_unavailable`.
 */
export function realBinding(): Promise<Binding> {
  loaded ??= import('serialport').then(
    (m) => m.SerialPort.binding as unknown as Binding,
    () => {
      loaded = undefined;
      throw new SerialFault('device_unavailable', 'not_installed', 'The serial port support (serialport) could not be loaded on this machine; reinstall AIOS Device.', false);
    },
  );
  return loaded;
}
