/**
 * The services the agent gives built-in handlers (`HandlerEnv.host`): methods on the local endpoint,
 * an entry in the agent status, desktop notices. Handlers are created before the endpoint exists, so
 * methods are collected here and handed to the endpoint when it starts.
 */
import type { HostServices, LocalMethod } from '../sdk/index.js';
import type { Logger } from '../base/logger.js';
import { showNotice } from '../base/user-notice.js';

/** Collects what handlers contribute; the composition root (start-agent) wires it to endpoint and status. */
export class HostServicesHub {
  private readonly localMethods: Record<string, LocalMethod> = {};
  private readonly statuses = new Map<string, Record<string, unknown>>();
  private readonly listeners = new Set<() => void>();

  constructor(private readonly log: Logger) {}

  /** The services one handler sees; its methods must be named `<name>.…`. */
  forHandler(name: string): HostServices {
    return {
      addLocalMethods: (methods) => {
        for (const [m, fn] of Object.entries(methods)) {
          if (!m.startsWith(name + '.')) throw new Error(`local method "${m}" must start with "${name}."`);
          this.localMethods[m] = fn;
        }
      },
      setStatus: (status) => {
        if (status) this.statuses.set(name, status);
        else this.statuses.delete(name);
        for (const cb of this.listeners) cb();
      },
      notice: (title, message) => showNotice(title, message, this.log),
    };
  }

  /** Every method handlers added, for the local endpoint. */
  methods(): Record<string, LocalMethod> {
    return { ...this.localMethods };
  }

  /** Handlers' status entries (`control.status` → `handlers`). */
  status(): Record<string, Record<string, unknown>> {
    return Object.fromEntries(this.statuses);
  }

  /** Called when a handler's status entry changes. */
  onChange(cb: () => void): void {
    this.listeners.add(cb);
  }
}
