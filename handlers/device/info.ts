import os from 'node:os';
import { Type } from '@sinclair/typebox';
import { defineFunction, type HandlerEnv } from '../../src/sdk/index.js';

const startedAt = Date.now();

/** `device.info`: read-only facts about the machine and this client. */
export function infoFunction(env: HandlerEnv) {
  return defineFunction({
    descriptor: {
      id: 'device.info',
      name: 'Device information',
      description: 'Returns the operating system, host name, AIOS Device version, uptimes and the functions this device offers. Use to check which device you are talking to and what it can do.',
      version: '1.0.0',
      capability_type: 'device',
      access: 'public',
      permission_level: 'public',
      risk: { read_only: true, destructive: false, idempotent: true, physical: false },
      confirmation: 'never',
      examples: ['Which computer is this and what can it do?'],
      input_schema: Type.Object({}, { additionalProperties: false }),
      output_schema: Type.Object({
        os: Type.Object({ platform: Type.String(), release: Type.String(), arch: Type.String(), version: Type.Optional(Type.String()) }),
        hostname: Type.String(),
        app_version: Type.String(),
        node_version: Type.Optional(Type.String()),
        uptime_s: Type.Number({ minimum: 0 }),
        agent_uptime_s: Type.Number({ minimum: 0 }),
        functions: Type.Array(Type.String()),
      }, { additionalProperties: false }),
      timeout_ms_default: 5000,
      timeout_ms_max: 10000,
      cancellable: true,
      locks: [],
    },
    async run() {
      return {
        os: { platform: process.platform, release: os.release(), arch: process.arch, version: os.version() },
        hostname: os.hostname(),
        app_version: env.appVersion,
        node_version: process.version,
        uptime_s: Math.round(os.uptime()),
        agent_uptime_s: Math.round((Date.now() - startedAt) / 1000),
        functions: env.listFunctions(),
      };
    },
  });
}
