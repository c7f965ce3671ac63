/**
 * Runs inside `dbus-run-session -- xvfb-run` (test/peers/notification-bus.ts): sends device.notify
 * through a real bridge and agent, then the prompt-waiting and update-needed notices, and prints what
 * the monitor saw as JSON.
 */
import { inProcessStack, until } from '../helpers/stack.js';
import { notifyPromptWaiting } from '../../src/consent/notify.js';
import type { PromptView } from '../../src/consent/prompt.js';
import { runOnNotificationBus } from '../peers/notification-bus.js';

await runOnNotificationBus(async (bus, result) => {
  const s = await inProcessStack();
  try {
    const title = 'Courier arrived ' + process.pid;
    const { record } = await s.client.call('device.notify', { title, message: 'At the front desk' });
    result['state'] = record.outcome?.state;
    result['error'] = record.outcome?.error?.type ?? null;
    result['seen'] = await bus.seen(title);
  } finally {
    await s.stop();
  }
  // The notice that a confirmation prompt waits: who asks and what, no argument values.
  // Who asks, truthfully: the runtime the bridge attested first, what it claims only as a claim.
  notifyPromptWaiting({ function_name: 'Write a text file', requester: { kind: 'agent', id: 'planner-1', name: 'Trip planner' }, runtime: { id: 'rt_front', name: 'Front desk' } } as unknown as PromptView);
  result['prompt_notice'] = (await bus.seen('Front desk (says it is "Trip planner") asks to: Write a text file')) && bus.log().includes('AIOS Device: confirmation needed');
  // An outdated client stops reconnecting and tells the user an update is needed.
  const old = await inProcessStack({ bridge: { min_client_version: '99.0.0' }, connect: false });
  try {
    await until(() => old.agent.session?.fatal, 5000, 'fatal stop');
    result['update_notice'] = await bus.seen('needs an update');
  } finally {
    await old.stop();
  }
});
