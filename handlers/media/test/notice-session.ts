/**
 * Runs inside `dbus-run-session -- xvfb-run` (test/peers/notification-bus.ts): a photo through a real
 * bridge and agent (in process; lavfi stands in for the camera), allowed in the `ui` provider; prints
 * whether "Camera in use by <requester>" reached the session bus, as JSON.
 */
import { inProcessStack, until } from '../../../test/helpers/stack.js';
import { runOnNotificationBus } from '../../../test/peers/notification-bus.js';
import { newCallId } from '../../../src/protocol/call-id.js';
import { LAVFI_CAMERA } from './peers.js';

await runOnNotificationBus(async (bus, result) => {
  const s = await inProcessStack({ agent: { grants: { cameras: ['*'] }, confirmations: { provider: 'ui', timeout_ms: 60_000 }, handlers: { media: { backend: 'ffmpeg', probe: false, devices: [LAVFI_CAMERA] } } } });
  try {
    // This script answers prompts as the tray would: attached, with a heartbeat.
    const { answerer_id, heartbeat_ms } = s.running.consent.ui.attach('notice test');
    const beat = setInterval(() => s.running.consent.ui.heartbeat(answerer_id), heartbeat_ms);
    beat.unref();
    const requester = `Shelf assistant ${process.pid}`;
    const call_id = newCallId();
    const call = s.client.call('camera.capture_photo', {}, { call_id, confirm_timeout_ms: 60_000, requester: { kind: 'agent', id: 'agt', name: requester } });
    const q = await until(() => s.running.consent.queue.list().find((p) => p.view.call_id === call_id), 20_000, 'the prompt');
    s.running.consent.ui.answer(q!.view.prompt_id, { answer: 'allow_once', scope: 'session' });
    const { record } = await call;
    result['state'] = record.outcome?.state;
    result['seen'] = await bus.seen(`Camera in use by ${requester}`);
  } finally {
    await s.stop();
  }
});
