/**
 * New call ids: UUIDv7 (their time is what the dedup window reads), from the `uuid` package, with its
 * random bytes drawn from a pool filled 4 KiB at a time. `uuid` asks the system for 16 bytes per id,
 * which costs more than the rest of minting it (Node's own `randomUUID` pools the same way). Ids are
 * ordered by their millisecond; within one millisecond their order is random (`uuid` keeps a counter
 * only when it draws the bytes itself).
 */
import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

const pool = new Uint8Array(4096);
let next = pool.length;

function pooledRandom(): Uint8Array {
  if (next + 16 > pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  const bytes = pool.subarray(next, next + 16);
  next += 16;
  return bytes;
}

/** A fresh UUIDv7 call id. */
export function newCallId(): string {
  return v7({ rng: pooledRandom });
}
