// Where a large content is cut into chunks that the store keeps once each, so that the 1,000th
// version of a 100 KB file after a one-line edit costs the chunk that changed, not the file again.
// The cuts depend on the bytes around them (a gear hash over the last 32 bytes), not on offsets:
// an insertion moves the cuts after it along with the bytes, and every chunk but the edited one is
// one the store has already. The table and the rule must never change: chunks cut another way
// would not match the ones already kept.

/** Contents below this are kept whole: a few chunks would cost more in hashes than they save. */
export const CHUNKED_FROM = 64 << 10;
const MIN_CHUNK = 1 << 10;
const MAX_CHUNK = 16 << 10;
/**
 * 12 bits, a cut every 4 KiB on average after the minimum: the hash's top bits, which depend on
 * the last 21 to 32 bytes (its low bits on the last few alone, too alike in source text).
 */
const CUT_MASK = 0xfff0_0000;

/** 256 fixed pseudo-random words (mulberry32 from a fixed seed). */
const GEAR = (() => {
  const table = new Uint32Array(256);
  let seed = 0x6361_7073;
  for (let i = 0; i < 256; i++) {
    seed = (seed + 0x6d2b79f5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    table[i] = (t ^ (t >>> 14)) >>> 0;
  }
  return table;
})();

/** The end offset of each chunk of `bytes`, the last one bytes.length; chunks are MIN_CHUNK..MAX_CHUNK but the last. */
export function chunkEnds(bytes: Uint8Array): number[] {
  const ends: number[] = [];
  let start = 0;
  while (start < bytes.length) {
    const limit = Math.min(bytes.length, start + MAX_CHUNK);
    let end = limit;
    let hash = 0;
    for (let i = start + MIN_CHUNK; i < limit; i++) {
      hash = ((hash << 1) + GEAR[bytes[i]!]!) >>> 0;
      if ((hash & CUT_MASK) >>> 0 === 0) {
        end = i + 1;
        break;
      }
    }
    ends.push(end);
    start = end;
  }
  return ends;
}
