/** serialport's native bindings, loaded on first use (a machine where they cannot load still runs the agent). */
import { createRequire } from 'node:module';
import { optionalNative } from '../../src/sdk/index.js';
import type { Binding } from './engine/binding.js';

const require = createRequire(import.meta.url);

/**
 * The binding `serialport` itself uses (`SerialPort.binding` is `@serialport/bindings-cpp`'s `autoDetect()`),
 * taken from `serialport`'s own dependency without loading the rest of the package: its ten parsers,
 * its stream and its mock are not used here, and skipping them is most of a first serial call's import
 * (`bindings-cpp` alone ≈ 40 % of `serialport`'s import time, docs/performance.md). Resolving `serialport`
 * first keeps the failure a missing install gives (`not_installed`, naming `serialport`).
 */
function loadBindings(): Promise<{ autoDetect(): unknown }> {
  return new Promise((resolve) => resolve(createRequire(require.resolve('serialport'))('@serialport/bindings-cpp') as { autoDetect(): unknown }));
}

/** The real bindings (lazily; `device_unavailable` with a reason when they cannot load). */
export async function binding(): Promise<Binding> {
  const m = await optionalNative('serialport', { feature: 'Serial ports', load: loadBindings });
  return m.autoDetect() as Binding;
}
