/**
 * A handler declares a listable grant kind with `defineGrantKind({ listing })` and Settings lists its
 * devices and names its id key, with no edit to the core (no table of listings in src/).
 */
import assert from 'node:assert/strict';
import test from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { defineGrantKind, listingCandidates } from '../../src/sdk/index.js';
import { silentLogger } from '../../src/base/logger.js';
import { GrantStore } from '../../src/grants/grant-store.js';
import { grantListings, listGrantCandidates } from '../../src/agent/settings-methods.js';
import type { Agent } from '../../src/agent/agent.js';

const gadgets = defineGrantKind({
  kind: 'gadgets',
  entry: Type.Union([Type.String({ minLength: 1 }), Type.Object({ gadget: Type.String(), alias: Type.Optional(Type.String()) })]),
  normalize: (e) => (typeof e === 'string' ? { id: e } : { id: e.gadget, ...(e.alias ? { alias: e.alias } : {}) }),
  listing: { function: 'gadget.list', candidates: (o) => listingCandidates(o, 'gadgets', 'serial', ['model']), idKey: 'gadget' },
});

test("a test handler's grant kind with a listing is listed by Settings, with its id key", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aios-listing-'));
  try {
    const grants = new GrantStore({ dataDir: dir, log: silentLogger() });
    grants.registerKinds('gadget', [gadgets]);
    const run = async () => ({ gadgets: [{ serial: 'G-1', model: 'Gizmo 3000', granted: false }, { serial: 'G-2', model: 'G-2', alias: 'desk' }] });
    const reg = { def: { run }, descriptor: { id: 'gadget.list', timeout_ms_default: 5000 } };
    const agent = {
      grants,
      registry: { get: (id: string) => (id === 'gadget.list' ? reg : undefined) },
      temp: { scope: () => ({ tempFile: () => '', tempDir: () => '', close: async () => undefined }) },
    } as unknown as Agent;
    assert.deepEqual(Object.keys(grantListings(agent)), ['gadgets']);
    assert.equal(grantListings(agent)['gadgets']!.idKey, 'gadget');
    assert.deepEqual(await listGrantCandidates(agent, 'gadgets', silentLogger()), [
      { id: 'G-1', label: 'Gizmo 3000', granted: false },
      { id: 'G-2', alias: 'desk' },
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
