/** Unit tests of the MCP groundwork: tool names that map back, annotations from risk, the bounded event store, device handles. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { annotationsFor, deviceToolName, functionOfDeviceTool, functionOfWorkspaceTool, isLeftOut, toolFor, workspaceToolName, TOOL_NAME_PATTERN } from '../../src/bridge/mcp/tools.js';
import { BoundedEventStore } from '../../src/bridge/mcp/event-store.js';
import { BridgeStore, type DeviceRecord } from '../../src/bridge/store.js';
import type { Descriptor } from '../../src/protocol/messages.js';
import { tempDir } from '../helpers/stack.js';

const device: DeviceRecord = { device_id: 'dev_1', workspace_id: 'ws', user_id: 'u', name: 'Front-desk PC', platform: null, arch: null, client_version: null, last_seen: null, functions: [], functions_revision: 0, adapter_card_digest: null };
const desc = (over: Partial<Descriptor> = {}): Descriptor => ({
  id: 'files.read_text', name: 'Read a text file', description: 'Reads a file.', version: '1.0.0', capability_type: 'file', access: 'restricted', permission_level: 'low',
  risk: { read_only: true, destructive: false, idempotent: true, physical: false }, confirmation: 'policy',
  input_schema: { type: 'object', $schema: 'https://json-schema.org/draft/2020-12/schema', properties: {} }, output_schema: { type: 'object' },
  timeout_ms_default: 1000, timeout_ms_max: 2000, cancellable: true, locks: [], ...over,
});

test('tool names map back to their function, per device and per workspace', () => {
  assert.equal(deviceToolName('files.read_text'), 'files-read_text');
  assert.equal(functionOfDeviceTool('files-read_text'), 'files.read_text');
  assert.equal(workspaceToolName('d12', 'files.read_text'), 'd12-files-read_text');
  assert.deepEqual(functionOfWorkspaceTool('d12-files-read_text'), { handle: 'd12', functionId: 'files.read_text' });
  assert.equal(functionOfWorkspaceTool('files-read_text'), undefined);
  assert.equal(functionOfDeviceTool('files.read_text'), undefined);
  assert.ok(TOOL_NAME_PATTERN.test(workspaceToolName('d1', 'serial.request')));
});

test('a function whose name would not fit is left out with a reason; a 2020-12 $schema is dropped; titles name the device', () => {
  const long = desc({ id: 'a.' + 'b'.repeat(70) });
  const out = toolFor(device, long, deviceToolName(long.id), false, 'en');
  assert.ok(isLeftOut(out) && /would not match/.test(out.reason));
  const t = toolFor(device, desc(), 'files-read_text', true, 'en');
  assert.ok(!isLeftOut(t));
  assert.equal(t.title, 'Front-desk PC: Read a text file');
  assert.equal('$schema' in t.inputSchema, false);
  assert.match(t.description, /^Offline now: Front-desk PC/);
});

test('annotations follow the risk; no risk is pessimistic', () => {
  assert.deepEqual(annotationsFor(desc(), 'x'), { title: 'x', readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
  const { risk: _r, ...bare } = desc();
  assert.deepEqual(annotationsFor(bare as Descriptor, 'x'), { title: 'x', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
});

test('the event store replays one stream after an id and drops what is past its byte budget or TTL', async () => {
  let now = 0;
  const s = new BoundedEventStore({ ttlMs: 1000, maxBytes: 400, now: () => now });
  const a = await s.storeEvent('A', { jsonrpc: '2.0', method: 'x' });
  await s.storeEvent('B', { jsonrpc: '2.0', method: 'other' });
  await s.storeEvent('A', { jsonrpc: '2.0', method: 'y' });
  const got: string[] = [];
  assert.equal(await s.replayEventsAfter(a, { send: async (_id, m) => void got.push((m as { method: string }).method) }), 'A');
  assert.deepEqual(got, ['y']);
  now = 5000;
  assert.equal(await s.getStreamIdForEventId(a), undefined);
  for (let i = 0; i < 20; i++) await s.storeEvent('A', { jsonrpc: '2.0', method: 'z'.repeat(50) });
  assert.ok(s.size <= 400);
});

test('device handles are assigned once per workspace and stay', () => {
  const dir = tempDir();
  try {
    const st = new BridgeStore(join(dir, 'b.sqlite'));
    assert.deepEqual([...st.mcpHandles('ws', ['dev_a', 'dev_b'])], [['dev_a', 'd1'], ['dev_b', 'd2']]);
    assert.deepEqual([...st.mcpHandles('ws', ['dev_c', 'dev_a'])].sort(), [['dev_a', 'd1'], ['dev_b', 'd2'], ['dev_c', 'd3']]);
    assert.deepEqual([...st.mcpHandles('other', ['dev_a'])], [['dev_a', 'd1']]);
    st.close();
    const again = new BridgeStore(join(dir, 'b.sqlite'));
    assert.equal(again.mcpHandles('ws').get('dev_c'), 'd3');
    again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
