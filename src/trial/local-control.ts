/**
 * The trial's hold on the device it tests, when it runs on the same machine (`--control local`): one
 * authenticated `WS /rpc` connection to the agent's local endpoint (found through `endpoint.json` and
 * `local-token` in its data folder, as the tray finds it), used to answer prompts (`--unattended`) and to
 * share a scratch folder for functions with side effects.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { listenerIsTheAgent } from '../endpoint/local-client.js';
import { controlClient } from '../control/client.js';
import { CONTROL_API, type ControlApi } from '../control/api.js';

/** A connected control client. */
export class LocalControl {
  private id = 0;
  private readonly pending = new Map<number, { resolve(v: Record<string, unknown>): void; reject(e: Error): void }>();
  private heartbeat: NodeJS.Timeout | undefined;
  private answering = false;
  /** Prompts answered so far (function id and the answer), for the report. */
  readonly answered: { prompt_id: string; function?: string; answer: string }[] = [];

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (d) => this.onMessage(String(d)));
    ws.on('close', () => {
      for (const p of this.pending.values()) p.reject(new Error('the agent closed the control connection'));
      this.pending.clear();
    });
  }

  /** Connects to the agent whose data folder is `dataDir`. */
  static async connect(dataDir: string): Promise<LocalControl> {
    let ep: { http: string };
    let token: string;
    try {
      ep = JSON.parse(readFileSync(join(dataDir, 'endpoint.json'), 'utf8')) as { http: string };
      token = readFileSync(join(dataDir, 'local-token'), 'utf8').trim();
    } catch {
      throw new Error(`no running agent found in ${dataDir} (endpoint.json and local-token are read from there; pass --agent-data-dir)`);
    }
    if (!(await listenerIsTheAgent(ep.http, dataDir))) {
      throw new Error(`the listener at ${ep.http} does not belong to the agent's OS user: endpoint.json in ${dataDir} is stale or another user took the port; the local token was not sent`);
    }
    const ws = new WebSocket(ep.http.replace(/^http/, 'ws') + '/rpc', ['aios-local.v1', `bearer.${token}`]);
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', (e) => reject(new Error(`cannot reach the agent's local endpoint at ${ep.http}: ${e.message}`)));
    });
    return new LocalControl(ws);
  }

  /** The control API, typed by its table (src/control/api.ts): `control.api.listGrants({ kind })`. */
  readonly api = controlClient((method, params) => this.call(method, params as Record<string, unknown>));

  /** Calls a control method by wire name; rejects with the agent's message on an error answer. Prefer `api`. */
  call(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      this.pending.set(++this.id, { resolve, reject });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id: this.id, method, params }));
    });
  }

  /** Whether the agent serves the control method `key` (a -32601 answer means no: an older agent). */
  async has(key: keyof ControlApi, params: Record<string, unknown> = {}): Promise<boolean> {
    try {
      await this.call(CONTROL_API[key].method, params);
      return true;
    } catch (e) {
      return !/method not found/i.test((e as Error).message);
    }
  }

  /**
   * Becomes the one who answers prompts and allows each once (`--unattended`). Uses the agent's attach
   * method with a heartbeat where it has one; older agents count a control connection's status call.
   */
  async answerPrompts(answer: 'allow_once' | 'deny' = 'allow_once'): Promise<'attach' | 'status'> {
    this.answering = true;
    let how: 'attach' | 'status' = 'attach';
    try {
      const a = await this.api.attachAnswerer({ name: 'aios-device trial' });
      const id = a.answerer_id;
      const every = typeof a.heartbeat_ms === 'number' ? a.heartbeat_ms : 2000;
      this.heartbeat = setInterval(() => void this.api.heartbeat({ answerer_id: id }).catch(() => undefined), every);
      this.heartbeat.unref();
    } catch {
      how = 'status';
      await this.api.status();
    }
    this.promptAnswer = answer;
    // Prompts raised before the attach are answered too.
    const list = await this.api.listPrompts();
    for (const p of list.prompts ?? []) void this.answer(p);
    return how;
  }

  private promptAnswer: 'allow_once' | 'deny' | 'none' = 'allow_once';

  /** How the next prompts are answered: allowed once, denied, or left to run out (`none`). */
  setAnswer(answer: 'allow_once' | 'deny' | 'none'): void {
    this.promptAnswer = answer;
  }

  private async answer(p: { prompt_id: string; function_id?: string }): Promise<void> {
    const answer = this.promptAnswer;
    if (answer === 'none') return;
    try {
      await this.api.answerPrompt({ prompt_id: p.prompt_id, answer });
      this.answered.push({ prompt_id: p.prompt_id, ...(p.function_id && { function: p.function_id }), answer });
    } catch {
      // withdrawn or answered elsewhere
    }
  }

  private onMessage(text: string): void {
    let m: { id?: number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: { message: string } };
    try {
      m = JSON.parse(text) as typeof m;
    } catch {
      return;
    }
    if (m.id !== undefined) {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.error) p?.reject(new Error(m.error.message));
      else p?.resolve(m.result ?? {});
      return;
    }
    if (this.answering && m.method === 'control/notification.prompt' && m.params) {
      const prompt = (m.params['prompt'] as Record<string, unknown> | undefined) ?? m.params;
      if (typeof prompt['prompt_id'] === 'string') void this.answer(prompt as { prompt_id: string; function_id?: string });
    }
  }

  close(): void {
    clearInterval(this.heartbeat);
    this.ws.close();
  }
}
