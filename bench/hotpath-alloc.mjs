// Preload for bench/hotpath.ts: SIGUSR2 starts a v8.GCProfiler, the next one stops it and writes the bytes
// allocated in between (sum over GCs of heap used before it minus heap used after the previous one).
import v8 from 'node:v8';
import { writeFileSync } from 'node:fs';
let prof;
let startUsed = 0;
process.on('SIGUSR2', () => {
  if (!prof) { prof = new v8.GCProfiler(); prof.start(); startUsed = v8.getHeapStatistics().used_heap_size; return; }
  const r = prof.stop(); prof = undefined;
  let prev = startUsed, total = 0;
  for (const s of r.statistics) {
    const before = s.beforeGC.heapStatistics.usedHeapSize, after = s.afterGC.heapStatistics.usedHeapSize;
    total += before - prev; prev = after;
  }
  total += v8.getHeapStatistics().used_heap_size - prev;
  writeFileSync(process.env.HP_ALLOC_OUT, String(total));
});
