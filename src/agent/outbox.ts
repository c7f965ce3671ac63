/**
 * Outcome delivery (PROTOCOL.md §6.8), in one place: whether a finished call's outcome goes back as its
 * invoke's response (a session is up) or waits in the journal's outbox; putting it back when that
 * response was lost; reporting what waits with `aios/call.report` after each hello (and whenever an
 * outcome is put back while a session is up); marking delivered only what the bridge acknowledged.
 * The journal stores the delivery flag; this class decides it.
 */
import type { Outcome } from '../protocol/messages.js';
import type { Logger } from '../base/logger.js';
import type { Journal } from './journal.js';

/** Outcomes per `aios/call.report`. */
export const REPORT_BATCH = 50;

/** What the outbox keeps in the journal (its public façade). */
export type OutboxStore = Pick<Journal, 'finish' | 'outbox' | 'markDelivered' | 'markUndelivered'>;

/** An established bridge session, as the outbox uses it. */
export interface OutboxLink {
  /** True while a frame sent now reaches the bridge's socket. */
  readonly isOpen: boolean;
  /** Sends `aios/call.report` `{ outcomes }` and resolves with the bridge's answer. */
  report(outcomes: Outcome[]): Promise<{ accepted?: string[] }>;
}

/** Owns the delivery state of finished calls. One per agent. */
export class Outbox {
  private link: OutboxLink | undefined;

  constructor(private readonly o: { store: OutboxStore; log: Logger }) {}

  /** A session is established on `link` (hello answered): responses reach the bridge, reports go there. */
  online(link: OutboxLink): void {
    this.link = link;
  }

  /** `link` closed (ignored if a newer session already replaced it). */
  offline(link: OutboxLink): void {
    if (this.link === link) this.link = undefined;
  }

  /** True when an outcome finishing now goes back as its invoke's response. */
  get deliverable(): boolean {
    return this.link?.isOpen ?? false;
  }

  /**
   * Journals a finished call's outcome (`json` is its JSON, made once): delivered already when a session
   * is up to carry the response, else waiting for `call.report`.
   */
  finish(outcome: Outcome, json: string): Promise<void> {
    return this.o.store.finish(outcome, this.deliverable, json);
  }

  /**
   * `outcome` is being handed to its invoke's socket as the response; `open` says whether that socket is still
   * open. A fresh outcome was journalled as delivered if a session was up when it finished; if its own socket
   * closed meanwhile, the outcome goes back to wait for `call.report`. A replayed outcome changes nothing.
   */
  answered(outcome: Outcome, open: boolean): void {
    if (!outcome.replayed && !open) this.responseLost(outcome.call_id);
  }

  /**
   * The response of a finished call could not go out on its invoke's socket (it closed meanwhile): the
   * outcome waits for `call.report`, and is reported at once if another session is up.
   */
  private responseLost(callId: string): void {
    void this.o.store
      .markUndelivered(callId)
      .then(() => this.flush())
      .catch(() => undefined);
  }

  /** Reports waiting outcomes in batches on the current session until none is left or it drops (§6.8). */
  async flush(): Promise<void> {
    const link = this.link;
    while (link && link.isOpen && this.link === link) {
      try {
        const batch = this.o.store.outbox(REPORT_BATCH);
        if (!batch.length) return;
        const res = await link.report(batch);
        const sent = new Set(batch.map((x) => x.call_id));
        const acked = (res.accepted ?? []).filter((id) => sent.has(id));
        await this.o.store.markDelivered(acked);
        if (acked.length < batch.length) {
          this.o.log.warn({ sent: batch.length, accepted: acked.length }, 'bridge did not accept every reported outcome; will retry on next connect');
          return;
        }
      } catch (e) {
        this.o.log.warn({ err: String(e) }, 'call.report failed; will retry on next connect');
        return;
      }
    }
  }
}
