/**
 * V8's optimising compiler held off while a resident agent is at rest (issue 32, memory at rest).
 *
 * An agent's start-up has a few loops hot enough for V8 to optimise them (the YAML lexer reading the
 * config and the adapters' manifests, the JCS digest of the descriptors, typebox building schemas, `ws`
 * masking the hello's large frame, path normalisation). The first optimisation pages in the optimising
 * compiler's code from the `node` binary and leaves its zones in the C allocator: ≈ 7 MB of a 73–74 MB
 * agent at rest, measured with `--no-opt` at launch against without (docs/performance.md, "The optimising
 * compiler at rest"). Nothing at rest needs optimised code: a resident agent waits for calls, and its
 * start-up and its reconnects' hellos are done once. So `holdOffOptimiser()` turns the compiler off when a
 * resident agent starts, and `releaseOptimiser()` turns it back on the first time the agent is used (a
 * call from the bridge, a request on the local endpoint): from then on the hot path is optimised exactly as
 * before, and the functions start-up made hot are not (they do not run again).
 *
 * Flags set after V8 started are outside Node's promise ("behaviour is undefined"); `--opt` / `--no-opt`
 * are read by V8 each time it decides whether to optimise a function, and this was checked to work on
 * Node 20, 22 and 24 (test/base/optimiser.test.ts runs it on the Node under test). Nothing is changed
 * when the process was started with any flag of V8's tiers of its own (`--no-opt`, `--max-opt`,
 * `--jitless`, …, on the command line or in NODE_OPTIONS): the operator's choice stands.
 */
import { setFlagsFromString } from 'node:v8';

let held = false;

/** V8 flags that choose the compiler tiers: given at launch, they are left alone. */
const TIER_FLAG = /^--(no-)?(opt|turbofan|maglev|sparkplug|jitless|max-opt|always-opt)\b/;

function tiersChosenAtLaunch(): boolean {
  const given = [...process.execArgv, ...(process.env['NODE_OPTIONS'] ?? '').split(/\s+/)];
  return given.some((a) => TIER_FLAG.test(a.replace(/_/g, '-')));
}

/** Turns V8's optimising compiler off until `releaseOptimiser()`; false when it was left alone. */
export function holdOffOptimiser(): boolean {
  if (held || tiersChosenAtLaunch()) return false;
  try {
    setFlagsFromString('--no-opt');
  } catch {
    return false;
  }
  held = true;
  return true;
}

/** Turns the optimising compiler back on if `holdOffOptimiser()` turned it off (once; cheap after). */
export function releaseOptimiser(): void {
  if (!held) return;
  held = false;
  setFlagsFromString('--opt');
}

/** Whether the optimising compiler is held off now. */
export function optimiserHeld(): boolean {
  return held;
}
