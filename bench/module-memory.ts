/**
 * Memory at rest by module (issue 32): what each group of the agent's modules adds to a fresh process's
 * RSS and V8 heap when imported in the agent's order (a module two groups share counts in the first), and
 * what starting the agent adds on top (handlers created, journal open, endpoint listening). Measured in a
 * child with --expose-gc, after two full collections per step. RSS steps include the pages the import
 * touched (code, native libraries), so they are rougher than the heap figures.
 * Run: node --import tsx bench/module-memory.ts [--json]   (npm run bench prints it too)
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { benchFile, isMain, loaderFor, runMain } from './child.js';
import type { ModuleMemoryStep } from './module-memory-child.js';

/** One row: the step and what it added. */
export interface ModuleMemoryRow {
  step: string;
  addedRssMb: number;
  addedHeapMb: number;
  rssMb: number;
}

const MB = 1e6;

/** Runs the child once and turns its cumulative readings into added amounts. */
export async function measureModuleMemory(o: { settleMs?: number } = {}): Promise<ModuleMemoryRow[]> {
  const file = benchFile('module-memory-child');
  const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', ...loaderFor(file), file], {
    env: { ...process.env, AIOS_MM_SETTLE_MS: String(o.settleMs ?? 5000) },
    maxBuffer: 1 << 20,
  });
  const steps = JSON.parse(stdout.trim().split('\n').pop()!) as ModuleMemoryStep[];
  return steps.map((s, i) => {
    const prev = i > 0 ? steps[i - 1]! : { rssBytes: 0, heapUsedBytes: 0 };
    return { step: s.step, addedRssMb: (s.rssBytes - prev.rssBytes) / MB, addedHeapMb: (s.heapUsedBytes - prev.heapUsedBytes) / MB, rssMb: s.rssBytes / MB };
  });
}

/** The rows as a table. */
export function formatModuleMemory(rows: readonly ModuleMemoryRow[]): string {
  const w = Math.max(...rows.map((r) => r.step.length));
  const n = (v: number) => v.toFixed(1).padStart(7);
  return [
    'memory at rest by module (imported in the agent\'s order; MB added, then the running total RSS)',
    `  ${'step'.padEnd(w)}  ${'+RSS'.padStart(7)}  ${'+heap'.padStart(7)}  ${'RSS'.padStart(7)}`,
    ...rows.map((r) => `  ${r.step.padEnd(w)}  ${n(r.addedRssMb)}  ${n(r.addedHeapMb)}  ${n(r.rssMb)}`),
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { json: { type: 'boolean', default: false } } });
  const rows = await measureModuleMemory();
  process.stdout.write((values.json ? JSON.stringify(rows, null, 2) : formatModuleMemory(rows)) + '\n');
}

if (isMain(import.meta.url)) runMain('bench:module-memory', main);
