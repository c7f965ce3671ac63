/**
 * The bluetooth handler: Bluetooth Low Energy devices the user shared (`grants.bluetooth`), through
 * @abandonware/noble, loaded only when a call needs it. See docs/handlers/bluetooth.md.
 */
import { defineHandler } from '../../src/sdk/index.js';
import { bluetoothFunctions, grantsFromEnv } from './functions.js';
import { BleRuntime, parseOptions } from './runtime.js';

export default defineHandler({
  name: 'bluetooth',
  create(env) {
    const log = env.log.child({ handler: 'bluetooth' });
    const runtime = new BleRuntime(parseOptions(env.options), (method, line) => log.debug({ noble: method, line }, 'noble console output'));
    return bluetoothFunctions({ runtime, grants: grantsFromEnv(env) });
  },
});
