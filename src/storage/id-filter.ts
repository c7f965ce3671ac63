/**
 * A Bloom filter of call ids: `mayHave` answers "maybe" or "certainly not". The journal keeps one for
 * the ids its table holds, so a fresh `call_id` (nearly every call) is known to be new without a
 * SQLite lookup; a "maybe" (a real id, or about one fresh id in 400) still asks the table.
 *
 * 16 bits and 4 probes per id give a false-positive rate of about 0.25 % at capacity. Ids are never
 * removed (a Bloom filter cannot forget): a swept id stays a "maybe", which only costs a lookup. The
 * owner rebuilds the filter from its table when `full` says it holds more ids than it was sized for.
 */
const BITS_PER_ID = 16;
const PROBES = 4;

export class IdFilter {
  private readonly bits: Uint32Array;
  private readonly m: number;
  private count = 0;

  constructor(readonly capacity: number) {
    this.m = Math.max(1024, Math.ceil((capacity * BITS_PER_ID) / 32) * 32);
    this.bits = new Uint32Array(this.m / 32);
  }

  /** How many ids were added. */
  get size(): number {
    return this.count;
  }

  /** More ids were added than the filter was sized for (its false-positive rate is climbing). */
  get full(): boolean {
    return this.count > this.capacity;
  }

  add(id: string): void {
    const [h1, h2] = hashes(id);
    for (let i = 0; i < PROBES; i++) {
      const b = (h1 + i * h2) % this.m;
      this.bits[b >>> 5]! |= 1 << (b & 31);
    }
    this.count++;
  }

  mayHave(id: string): boolean {
    const [h1, h2] = hashes(id);
    for (let i = 0; i < PROBES; i++) {
      const b = (h1 + i * h2) % this.m;
      if ((this.bits[b >>> 5]! & (1 << (b & 31))) === 0) return false;
    }
    return true;
  }
}

/** Two independent 32-bit FNV-1a hashes of the string's UTF-16 code units (double hashing). */
function hashes(s: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  // h2 odd, so the probes of one id never collapse onto one bit.
  return [a >>> 0, (b | 1) >>> 0];
}
