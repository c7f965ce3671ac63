/**
 * The part of @abandonware/noble's JavaScript API this handler uses, written out structurally so that the
 * session, pool and operations type-check without loading noble (which throws at import time on a
 * machine without Bluetooth).
 */
import type { EventEmitter } from 'node:events';

/** Adapter states noble reports. */
export type NobleState = 'unknown' | 'resetting' | 'unsupported' | 'unauthorized' | 'poweredOff' | 'poweredOn';

/** A characteristic as noble gives it after discovery. */
export interface NobleCharacteristic extends EventEmitter {
  readonly uuid: string;
  readonly name: string | null;
  readonly properties: string[];
  read(cb: (err: unknown, data: Buffer) => void): void;
  write(data: Buffer, withoutResponse: boolean, cb: (err: unknown) => void): void;
  subscribe(cb: (err: unknown) => void): void;
  unsubscribe(cb: (err: unknown) => void): void;
}

/** A service as noble gives it after discovery. */
export interface NobleService extends EventEmitter {
  readonly uuid: string;
  readonly name: string | null;
  discoverCharacteristics(uuids: string[], cb: (err: unknown, chars: NobleCharacteristic[]) => void): void;
}

/** A peripheral as noble reports it from a scan. */
export interface NoblePeripheral extends EventEmitter {
  readonly id: string;
  readonly address: string;
  readonly connectable?: boolean;
  readonly rssi: number;
  readonly advertisement: {
    localName?: string;
    serviceUuids?: string[];
    manufacturerData?: Buffer | null;
  };
  state: 'error' | 'connecting' | 'connected' | 'disconnecting' | 'disconnected';
  connect(cb: (err: unknown) => void): void;
  disconnect(cb?: () => void): void;
  discoverServices(uuids: string[], cb: (err: unknown, services: NobleService[]) => void): void;
}

/** The noble object (one per adapter binding). */
export interface Noble extends EventEmitter {
  readonly state: NobleState;
  startScanning(serviceUuids: string[], allowDuplicates: boolean, cb: (err: unknown) => void): void;
  stopScanning(cb?: () => void): void;
}
