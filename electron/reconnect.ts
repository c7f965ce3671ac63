/**
 * Tells the agent to reconnect at once when the machine wakes up or the network changes, instead of
 * waiting out its backoff. Electron has no "network changed" event, so the network is sampled: the
 * online flag and the set of interface addresses.
 */
import type { PowerMonitor } from 'electron';

/** Where the watcher gets its signals (Electron's powerMonitor and net in the app; fakes in tests). */
export interface ConnectivitySources {
  powerMonitor: Pick<PowerMonitor, 'on' | 'off'>;
  isOnline(): boolean;
  /** A string that changes whenever the machine's network addresses change. */
  networkFingerprint(): string;
}

/** A running watcher. */
export interface ConnectivityWatcher {
  /** Samples the network now (the timer calls this; tests call it directly). */
  check(): void;
  stop(): void;
}

/** Calls `reconnect` on resume / unlock and when the network comes back or changes. */
export function watchConnectivity(reconnect: (why: string) => void, src: ConnectivitySources, pollMs = 5000): ConnectivityWatcher {
  let online = src.isOnline();
  let fingerprint = src.networkFingerprint();
  const onResume = (): void => reconnect('resume');
  const onUnlock = (): void => reconnect('unlock-screen');
  src.powerMonitor.on('resume', onResume);
  src.powerMonitor.on('unlock-screen', onUnlock);
  const check = (): void => {
    const nowOnline = src.isOnline();
    const nowPrint = src.networkFingerprint();
    const cameBack = nowOnline && !online;
    const changed = nowOnline && nowPrint !== fingerprint;
    online = nowOnline;
    fingerprint = nowPrint;
    if (cameBack) reconnect('online');
    else if (changed) reconnect('network-change');
  };
  const timer = pollMs > 0 ? setInterval(check, pollMs) : undefined;
  timer?.unref();
  return {
    check,
    stop() {
      clearInterval(timer);
      src.powerMonitor.off('resume', onResume);
      src.powerMonitor.off('unlock-screen', onUnlock);
    },
  };
}
