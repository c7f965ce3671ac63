/**
 * The built-in `device` adapter: `device.info` and `device.notify`.
 */
import { defineHandler } from '../../src/sdk/index.js';
import { infoFunction } from './info.js';
import { notifyFunction } from './notify.js';

export default defineHandler({
  name: 'device',
  title: 'Device basics',
  description: 'Facts about this device (OS, host name, app version, uptime, functions) and desktop notifications to its user.',
  about: 'Built-in adapter: facts about this device and desktop notifications.',
  create: (env) => [infoFunction(env), notifyFunction(env)],
});
