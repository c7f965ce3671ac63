/**
 * A transport for one HTTP request/response exchange (`POST /rpc`): the request body goes in as one
 * message, and what the peer sends back is the response body. Lets plain HTTP run on the same
 * JsonRpcPeer as a WebSocket connection.
 */
import type { CloseInfo, Transport } from './transport.js';

/** One request in, at most one answer out. */
export class ExchangeTransport implements Transport {
  isOpen = true;
  onmessage?: (text: string) => void | Promise<void>;
  onclose?: (info: CloseInfo) => void;
  private readonly sent: string[] = [];

  send(text: string): void {
    if (!this.isOpen) throw new Error('transport closed');
    this.sent.push(text);
  }

  close(code = 1000, reason = ''): void {
    if (!this.isOpen) return;
    this.isOpen = false;
    this.onclose?.({ code, reason });
  }

  /** Delivers `text`, waits until it is handled, closes, and returns the answer (undefined: none, e.g. a notification). */
  async exchange(text: string): Promise<string | undefined> {
    try {
      await this.onmessage?.(text);
    } finally {
      this.close();
    }
    return this.sent[0];
  }
}
