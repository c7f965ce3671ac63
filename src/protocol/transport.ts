/**
 * The transport seam: something that carries one JSON text message at a time in both directions.
 * The JSON-RPC peer runs over any implementation: WebSocket in production, a linked in-memory pair in
 * unit tests.
 */

/** Why a transport closed. */
export interface CloseInfo {
  code: number;
  reason: string;
}

/** A bidirectional message channel. */
export interface Transport {
  /** Sends one serialized JSON-RPC message. Throws if closed. */
  send(text: string): void;
  /**
   * Sends one message given as parts of its text, in order (a response around an outcome's JSON made
   * earlier): optional; without it the peer joins the parts and calls `send`.
   */
  sendParts?(parts: readonly string[]): void;
  close(code?: number, reason?: string): void;
  readonly isOpen: boolean;
  /** Handles one message; the promise (if any) settles once it is handled (ExchangeTransport waits for it). */
  onmessage?: (text: string) => void | Promise<void>;
  onclose?: (info: CloseInfo) => void;
}

/** Two in-memory transports wired to each other; delivery is asynchronous like a socket's. */
export function createLinkedPair(): [Transport, Transport] {
  class Mem implements Transport {
    other!: Mem;
    isOpen = true;
    onmessage?: (text: string) => void;
    onclose?: (info: CloseInfo) => void;
    send(text: string): void {
      if (!this.isOpen) throw new Error('transport closed');
      const target = this.other;
      queueMicrotask(() => {
        if (target.isOpen) target.onmessage?.(text);
      });
    }
    close(code = 1000, reason = ''): void {
      if (!this.isOpen) return;
      this.isOpen = false;
      this.onclose?.({ code, reason });
      this.other.close(code, reason);
    }
  }
  const a = new Mem();
  const b = new Mem();
  a.other = b;
  b.other = a;
  return [a, b];
}
