/** Reading a call's SSE `events` stream (PROTOCOL.md §10) in tests. */
import assert from 'node:assert/strict';

/** One SSE event: its `id`, `event` name and parsed `data`. */
export interface SseEvent {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

/**
 * Opens an SSE stream; `events` fills as they arrive, `done` resolves when the bridge ends the stream,
 * `close` ends it from this side.
 */
export function sseEvents(url: string, token: string): { events: SseEvent[]; done: Promise<SseEvent[]>; close: () => void } {
  const events: SseEvent[] = [];
  const ac = new AbortController();
  const done = (async () => {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: ac.signal });
    assert.equal(res.status, 200);
    const dec = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += dec.decode(chunk, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const f: Record<string, string> = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const c = line.indexOf(': ');
            f[line.slice(0, c)] = line.slice(c + 2);
          }
          if (f['event']) events.push({ id: Number(f['id']), event: f['event'], data: JSON.parse(f['data'] ?? '{}') as Record<string, unknown> });
        }
      }
    } catch (e) {
      if (!ac.signal.aborted) throw e;
    }
    return events;
  })();
  return { events, done, close: () => ac.abort() };
}
