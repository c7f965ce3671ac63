/** serialport's native bindings, loaded on first use (a machine where they cannot load still runs the agent). */
import { optionalNative } from '../../src/sdk/index.js';
import type { Binding } from './engine/binding.js';

/** The real bindings (lazily; `device_unavailable` with a reason when they cannot load). */
export async function binding(): Promise<Binding> {
  const m = await optionalNative('serialport', { feature: 'Serial ports', load: () => import('serialport') });
  return m.SerialPort.binding as unknown as Binding;
}
