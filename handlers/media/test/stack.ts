/**
 * A CLI-started bridge and agent for the media tests, with the local endpoint's control methods to see
 * and answer prompts (the `ui` provider: what the tray does) and to read the agent status.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { HttpBlobClient } from '../../../src/agent/blob-client.js';
import { callLocal } from '../../../src/endpoint/local-client.js';
import type { BlobRef } from '../../../src/sdk/index.js';
import { processStack, until } from '../../../test/helpers/stack.js';

/** A prompt as the control API lists it. */
export interface PromptView {
  prompt_id: string;
  call_id: string;
  summary?: string;
  sentence?: string;
  [k: string]: unknown;
}

/** The media handler's status entry. */
export interface MediaStatus {
  capturing: { kind: string; device: string; function: string; requester: string }[];
  providers: { name: string }[];
  open: number;
  opened: number;
}

/** Starts bridge and agent as CLI processes with `agent` config merged in. */
export async function mediaStack(agent: Record<string, unknown>) {
  const s = await processStack({ agent: { confirmations: { provider: 'ui', timeout_ms: 60_000 }, ...agent } });
  const stopStack = s.stop.bind(s);
  const dataDir = join(s.dir, 'agent');
  const endpoint = await until(() => {
    try {
      return JSON.parse(readFileSync(join(dataDir, 'endpoint.json'), 'utf8')) as { http: string };
    } catch {
      return undefined;
    }
  }, 20_000, 'endpoint.json');
  const local = { http: endpoint!.http, token: readFileSync(join(dataDir, 'local-token'), 'utf8').trim() };
  const control = (method: string, params: unknown = {}) => callLocal(local, method, params);
  // This test answers prompts as the tray does: attached as the answerer, with a heartbeat.
  const att = (await control('control.prompts.attach', { name: 'media test' })) as { answerer_id: string; heartbeat_ms: number };
  const beat = setInterval(() => void control('control.prompts.heartbeat', { answerer_id: att.answerer_id }).catch(() => undefined), att.heartbeat_ms);
  beat.unref();
  return {
    ...s,
    async stop() {
      clearInterval(beat);
      await stopStack();
    },
    /** Files left in the agent's call temp area (`<data_dir>/tmp/calls`), where captures are written. */
    tempFiles(): string[] {
      const root = join(dataDir, 'tmp', 'calls');
      return existsSync(root) ? readdirSync(root, { recursive: true }).map(String).filter((p) => !statSync(join(root, p)).isDirectory()) : [];
    },
    local,
    dataDir,
    control,
    /** Waits for the prompt of this call (a control call also marks a UI as attached). */
    async prompt(callId: string): Promise<PromptView> {
      const p = await until(async () => ((await control('control.prompts.list')) as { prompts: PromptView[] }).prompts.find((p) => p.call_id === callId), 20_000, `the prompt of ${callId}`);
      return p!;
    },
    async answer(p: PromptView, answer: 'allow_once' | 'deny') {
      await control('control.prompts.answer', { prompt_id: p.prompt_id, answer });
    },
    async mediaStatus(): Promise<MediaStatus> {
      const st = (await control('control.status')) as { handlers?: { media?: MediaStatus } };
      return st.handlers?.media ?? { capturing: [], providers: [], open: 0, opened: 0 };
    },
    /** Downloads a blob through the bridge (size and SHA-256 checked by the client). */
    async download(ref: BlobRef, path: string) {
      await new HttpBlobClient({ baseUrl: s.url, token: () => Promise.resolve(s.tokens.runtime) }).downloadToFile(ref, path);
    },
  };
}
