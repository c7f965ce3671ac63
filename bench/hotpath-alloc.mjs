// Preload for bench/hotpath.ts: SIGUSR2 starts a v8.GCProfiler, the next one stops it and writes the bytes
// allocated in between (sum over GCs of heap used before it minus heap used after the previous one).
// With HP_HEAP_PROF set, the same window is also recorded by V8's sampling heap profiler (objects that
// died young included), written to that path as a .heapprofile for bench/heap-top.mjs.
import v8 from 'node:v8';
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';
let prof;
let startUsed = 0;
let session;
process.on('SIGUSR2', () => {
  if (!prof) {
    if (process.env.HP_HEAP_PROF) startSampling();
    prof = new v8.GCProfiler(); prof.start(); startUsed = v8.getHeapStatistics().used_heap_size; return;
  }
  const r = prof.stop(); prof = undefined;
  let prev = startUsed, total = 0;
  for (const s of r.statistics) {
    const before = s.beforeGC.heapStatistics.usedHeapSize, after = s.afterGC.heapStatistics.usedHeapSize;
    total += before - prev; prev = after;
  }
  total += v8.getHeapStatistics().used_heap_size - prev;
  const done = () => writeFileSync(process.env.HP_ALLOC_OUT, String(total));
  if (session) stopSampling(done);
  else done();
});

function startSampling() {
  session = new Session();
  session.connect();
  session.post('HeapProfiler.enable');
  session.post('HeapProfiler.startSampling', { samplingInterval: Number(process.env.HP_HEAP_INTERVAL ?? 128), includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
}

function stopSampling(done) {
  session.post('HeapProfiler.stopSampling', (err, res) => {
    if (!err) writeFileSync(process.env.HP_HEAP_PROF, JSON.stringify(res.profile));
    session.disconnect();
    session = undefined;
    done();
  });
}
