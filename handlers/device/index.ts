/**
 * The built-in `device` adapter: `device.info` and `device.notify`.
 */
import { defineHandler } from '../../src/sdk/index.js';
import { infoFunction } from './info.js';
import { notifyFunction } from './notify.js';

export default defineHandler({
  name: 'device',
  create: (env) => [infoFunction(env), notifyFunction(env)],
});
