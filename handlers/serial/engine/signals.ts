/**
 * Modem control: set DTR/RTS, assert BRK or send a timed break, and read CTS/DSR/DCD. The bindings set
 * every line on each call, so the link remembers what this agent set last.
 */
import type { StatusLines } from './binding.js';
import type { SerialLink, SetLines } from './link.js';
import { abortable } from './link.js';

/** A change to the control lines; `break_ms` sends a break of that length and releases it. */
export interface SignalChange {
  dtr?: boolean;
  rts?: boolean;
  brk?: boolean;
  break_ms?: number;
}

/** Applies a change; a timed break is released even when the call is aborted during it. */
export async function applySignals(link: SerialLink, change: SignalChange, signal: AbortSignal): Promise<SetLines> {
  const lines: Partial<SetLines> = {};
  if (change.dtr !== undefined) lines.dtr = change.dtr;
  if (change.rts !== undefined) lines.rts = change.rts;
  if (change.brk !== undefined) lines.brk = change.brk;
  let now = await link.setLines(lines);
  if (change.break_ms !== undefined) {
    await link.setLines({ brk: true });
    try {
      await abortable(new Promise<void>((r) => setTimeout(r, change.break_ms)), signal);
    } finally {
      // Never leave the line in break: an aborted call still releases it.
      now = await link.setLines({ brk: false });
    }
  }
  return now;
}

/** The status lines and the control lines as last set. */
export async function readSignals(link: SerialLink): Promise<StatusLines & { set: SetLines }> {
  const status = await link.getLines();
  return { cts: status.cts, dsr: status.dsr, dcd: status.dcd, set: { ...link.lines } };
}
