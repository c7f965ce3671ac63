/**
 * A CLI-started bridge and agent for the media tests, with the local endpoint's control methods to see
 * and answer prompts (the `ui` provider: what the tray does) and to read the agent status.
 */
import { readFileSync } from 'node:fs';
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
  return {
    ...s,
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
