// Reads a sampling heap profile written by bench/hotpath.ts (--heap-prof FILE) and prints where the bytes
// were allocated, per call: by the allocating function itself, and by the nearest frame of this project's
// own code on its stack (so that a `JSON.stringify` or a `new Promise` is charged to the function that
// asked for it).
// Run: node bench/heap-top.mjs FILE CALLS [N]
import { readFileSync } from 'node:fs';

const [file, callsArg, nArg] = process.argv.slice(2);
if (!file || !callsArg) throw new Error('usage: node bench/heap-top.mjs FILE CALLS [N]');
const calls = Number(callsArg);
const top = Number(nArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8'));

const nodes = new Map();
(function walk(n, parent) {
  nodes.set(n.id, { n, parent });
  for (const c of n.children) walk(c, n.id);
})(profile.head, undefined);

const own = (url) => /[/\\](src|handlers)[/\\]/.test(url) && !/node_modules/.test(url);
const where = (cf) => `${cf.functionName || '(anonymous)'} ${cf.url.replace(/^.*?[/\\](dist|node_modules)[/\\]/, '$1/').replace(/^node:/, 'node:')}:${cf.lineNumber + 1}`;

const self = new Map();
const nearest = new Map();
let total = 0;
for (const s of profile.samples) {
  total += s.size;
  const e = nodes.get(s.nodeId);
  if (!e) continue;
  const k = where(e.n.callFrame);
  self.set(k, (self.get(k) ?? 0) + s.size);
  let id = s.nodeId;
  let mine = '(no project frame)';
  while (id !== undefined) {
    const x = nodes.get(id);
    if (own(x.n.callFrame.url)) {
      mine = where(x.n.callFrame);
      break;
    }
    id = x.parent;
  }
  nearest.set(mine, (nearest.get(mine) ?? 0) + s.size);
}

const print = (title, m) => {
  console.log(`\n${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${(v / calls).toFixed(0).padStart(7)} B  ${k}`);
};
console.log(`sampled ${(total / calls).toFixed(0)} B per call over ${calls} calls`);
print('by allocating function (self):', self);
print('by nearest project frame:', nearest);
