/**
 * Port settings: what a grant may preset and a call may override, their defaults, and the bindings'
 * open options they become. Two calls with equal settings share an open port; a change reopens it.
 */
import type { OpenOptions } from './binding.js';

/** Parity names as the bindings take them. */
export type Parity = 'none' | 'even' | 'odd' | 'mark' | 'space';
/** Flow control: none, hardware (RTS/CTS) or software (XON/XOFF). */
export type FlowControl = 'none' | 'rtscts' | 'xonxoff';

/** Settings of one port, all optional (grant defaults, call overrides). */
export interface PortSettings {
  baud?: number;
  data_bits?: 5 | 6 | 7 | 8;
  parity?: Parity;
  stop_bits?: 1 | 1.5 | 2;
  flow_control?: FlowControl;
}

/** Every setting filled in. */
export type ResolvedSettings = Required<PortSettings>;

/** Defaults when neither the grant nor the call says: 9600 8N1, no flow control. */
export const DEFAULT_SETTINGS: ResolvedSettings = { baud: 9600, data_bits: 8, parity: 'none', stop_bits: 1, flow_control: 'none' };

/** Call overrides over grant settings over defaults. */
export function resolveSettings(grant: PortSettings | undefined, call: PortSettings | undefined): ResolvedSettings {
  const pick = <K extends keyof PortSettings>(k: K): ResolvedSettings[K] => (call?.[k] ?? grant?.[k] ?? DEFAULT_SETTINGS[k]) as ResolvedSettings[K];
  return { baud: pick('baud'), data_bits: pick('data_bits'), parity: pick('parity'), stop_bits: pick('stop_bits'), flow_control: pick('flow_control') };
}

/** A stable key for comparing settings. */
export function settingsKey(s: ResolvedSettings): string {
  return `${s.baud}/${s.data_bits}${s.parity[0]}${s.stop_bits}/${s.flow_control}`;
}

/** The bindings' open options. `lock: true` makes a second program's open fail (Unix flock; Windows is exclusive anyway). */
export function openOptions(path: string, s: ResolvedSettings): OpenOptions {
  return {
    path,
    baudRate: s.baud,
    dataBits: s.data_bits,
    parity: s.parity,
    stopBits: s.stop_bits,
    rtscts: s.flow_control === 'rtscts',
    xon: s.flow_control === 'xonxoff',
    xoff: s.flow_control === 'xonxoff',
    lock: true,
  };
}
