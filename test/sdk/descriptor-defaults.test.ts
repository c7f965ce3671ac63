/**
 * `defineFunction` fills the descriptor fields its author leaves out with the pessimistic defaults
 * (issue 29 §3), the same ones a third-party card's skill gets: a function that says only its id, name,
 * level and schemas is a valid §4 descriptor and runs through the real call path, and what it does say wins.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from '@sinclair/typebox';
import { defineFunction, defineHandler, DESCRIPTOR_DEFAULTS } from '../../src/sdk/index.js';
import { createTestHost } from '../../src/kit/testing.js';
import { skillToDescriptor } from '../../src/discovery/card.js';
import { Descriptor } from '../../src/protocol/messages.js';
import { schemaValidator } from '../../src/protocol/schema-validator.js';

const shout = defineFunction({
  descriptor: {
    id: 'dflt_t.shout',
    name: 'Shout',
    permission_level: 'public',
    input_schema: Type.Object({ text: Type.String() }, { additionalProperties: false }),
    output_schema: Type.Object({ text: Type.String() }, { additionalProperties: false }),
  },
  async run(args) {
    return { text: args.text.toUpperCase() };
  },
});

test('a function that says only its id, name, level and schemas gets the pessimistic defaults, is a valid descriptor and runs', async () => {
  const d = shout.descriptor;
  assert.deepEqual(schemaValidator.validate(Descriptor, d), []);
  assert.deepEqual(
    [d.access, d.confirmation, d.capability_type, d.cancellable, d.locks, d.version, d.description, d.risk],
    ['restricted', 'policy', 'api', false, [], '1.0.0', '', undefined],
    'restricted, confirmed by policy, reaching beyond the device, not cancellable, no risk declared (treated as destructive)',
  );
  assert.deepEqual([d.timeout_ms_default, d.timeout_ms_max], [30_000, 120_000]);
  // The same defaults as a third-party card's skill that says as little.
  const skill = skillToDescriptor({ id: d.id, name: d.name, permission_level: 'public', input_schema: d.input_schema, output_schema: d.output_schema }, { version: '1.0.0' });
  assert.deepEqual(skill, d);

  const host = await createTestHost(defineHandler({ name: 'dflt_t', create: () => [shout] }), { grants: {}, options: {} });
  try {
    const out = await host.call('dflt_t.shout', { text: 'hi' });
    assert.equal(out.state, 'completed', JSON.stringify(out.error));
    assert.deepEqual(out.output, { text: 'HI' });
  } finally {
    await host.close();
  }
});

test('what a function says wins over every default; a default maximum is never below the timeout it says', () => {
  const f = defineFunction({
    descriptor: {
      id: 'dflt_t.wait', name: 'Wait', permission_level: 'low', access: 'public', confirmation: 'never', capability_type: 'device',
      cancellable: true, locks: ['dflt:one'], version: '2.0.0', description: 'Waits.', timeout_ms_default: 200_000,
      input_schema: Type.Object({}), output_schema: Type.Object({}),
    },
    run: async () => ({}),
  });
  const d = f.descriptor;
  assert.deepEqual(
    [d.access, d.confirmation, d.capability_type, d.cancellable, d.locks, d.version, d.description, d.timeout_ms_default, d.timeout_ms_max],
    ['public', 'never', 'device', true, ['dflt:one'], '2.0.0', 'Waits.', 200_000, 200_000],
  );
  // Two functions never share a default object (one's locks cannot become another's).
  assert.notEqual(shout.descriptor.locks, DESCRIPTOR_DEFAULTS.locks);
});
