/**
 * Where a process's CPU went within one window of time, from a V8 CPU profile (`--cpu-prof`): self time
 * by module (a package, or a file of this repository) and by function. The window is given on the
 * system's monotonic clock in µs, the clock of both V8's profile timestamps and `process.hrtime` on
 * Linux, so a driver can cut a child's profile to the span of one of its requests (bench/first-call.ts).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** One line of a summary: a module or a function, its self time in the window (ms). */
export interface SelfTime {
  name: string;
  ms: number;
}

/** What the window held. */
export interface WindowSummary {
  /** The sampled time in the window, ms (idle included). */
  totalMs: number;
  /** Time with JavaScript or the runtime on the stack (not `(idle)`), ms. */
  busyMs: number;
  byModule: SelfTime[];
  byFunction: SelfTime[];
}

/** The repository's folder (this file is in bench/, or dist/bench/ when compiled). */
const ROOT = fileURLToPath(new URL('..', import.meta.url)).replace(/dist\/$/, '');

/** A short name for a script URL: `pkg` for a package, the repository path for our own files. */
function moduleOf(url: string): string {
  if (!url) return '(native)';
  if (url.startsWith('node:')) return 'node:*';
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = path.slice(nm + '/node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  return path.startsWith(ROOT) ? path.slice(ROOT.length).replace(/^dist\//, '') : path;
}

/** Summarises the samples of `file` taken between `fromUs` and `toUs` (monotonic µs). */
export function summarizeWindow(file: string, fromUs: number, toUs: number, top = 15): WindowSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const mod = new Map<string, number>();
  const fn = new Map<string, number>();
  let t = p.startTime;
  let total = 0;
  let busy = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    t += dt;
    // A sample stands for the interval up to it.
    if (t < fromUs || t > toUs) continue;
    const n = byId.get(p.samples[i]!)!;
    const f = n.callFrame;
    total += dt;
    if (f.functionName === '(idle)') continue;
    busy += dt;
    const m = f.url ? moduleOf(f.url) : f.functionName || '(anonymous)';
    mod.set(m, (mod.get(m) ?? 0) + dt);
    const name = `${f.functionName || '(anonymous)'} ${f.url ? `${moduleOf(f.url)}:${f.lineNumber + 1}` : ''}`.trim();
    fn.set(name, (fn.get(name) ?? 0) + dt);
  }
  const sorted = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: us / 1000 }));
  return { totalMs: total / 1000, busyMs: busy / 1000, byModule: sorted(mod), byFunction: sorted(fn) };
}

/** The summary as text. */
export function formatWindow(s: WindowSummary): string {
  const rows = (l: SelfTime[]) => l.map((r) => `    ${r.ms.toFixed(1).padStart(7)} ms  ${r.name}`);
  return [`  window ${s.totalMs.toFixed(1)} ms, busy ${s.busyMs.toFixed(1)} ms; self time by module:`, ...rows(s.byModule), '  by function:', ...rows(s.byFunction)].join('\n');
}
