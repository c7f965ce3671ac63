/**
 * Keeps noble's own console output (its WebSocket binding prints "on -> open" and every adapter state; its
 * HCI binding prints warnings) out of the agent's stdout, which belongs to the CLI. Installed once per
 * process when noble is first loaded: a console call whose stack runs through noble's files goes to the
 * handler's logger at debug level instead, first argument only (later ones can hold commands with data).
 */

const NOBLE_FILES = /[\\/]@abandonware[\\/](noble|bluetooth-hci-socket)[\\/]/;
const METHODS = ['log', 'info', 'warn', 'error', 'debug'] as const;

/** Where diverted lines go: a plain sentence from noble, cut to 120 characters. */
export type NobleLineSink = (method: string, line: string) => void;

let sink: NobleLineSink = () => {};
let installed = false;

/** Diverts noble's console output to `to` from now on (the latest caller wins: one logger per agent). */
export function quietNobleConsole(to: NobleLineSink): void {
  sink = to;
  if (installed) return;
  installed = true;
  for (const m of METHODS) {
    const original = console[m].bind(console);
    console[m] = (...args: unknown[]) => {
      // Cheap check first: noble's lines are rare, the agent's own console use is rarer still.
      const stack = new Error().stack ?? '';
      if (NOBLE_FILES.test(stack)) {
        const first = args[0];
        sink(m, typeof first === 'string' ? first.slice(0, 120) : `(${typeof first})`);
        return;
      }
      original(...args);
    };
  }
}
