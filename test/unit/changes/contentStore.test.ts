import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { CHUNKED_FROM, chunkEnds } from '../../../electron/changes/contentChunks.ts';
import { ContentStore, contentHash } from '../../../electron/changes/contentStore.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The content store keeps each content once, and a large one as chunks cut by its bytes, so a
// small edit of a large file costs about a chunk.

/** A source-like text of about `size` bytes, line by line from a seed. */
function sourceText(size: number, seed: number): string {
  const lines: string[] = [];
  let n = seed;
  for (let length = 0; length < size;) {
    n = (n * 1_103_515_245 + 12_345) % 2 ** 31;
    const line = `  const value${n % 9973} = compute(${n % 101}, '${(n % 7919).toString(36)}'); // step ${lines.length}`;
    lines.push(line);
    length += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

describe('the content store', () => {
  const home = tempHome();
  const store = ContentStore.open(home);
  afterAll(() => {
    store.close();
    home.remove();
  });

  it('gives back every content as it was put, small or chunked, and cuts chunks within their bounds', () => {
    const content = fc.oneof(
      fc.uint8Array({ maxLength: 2048 }),
      fc.integer({ min: CHUNKED_FROM - 10, max: 300_000 }).map((n) => new Uint8Array(randomBytes(n))),
      fc.integer({ min: CHUNKED_FROM, max: 200_000 }).map((n) => Buffer.from(sourceText(n, n))),
    );
    fc.assert(
      fc.property(content, (bytes) => {
        const ends = chunkEnds(bytes);
        expect(ends.at(-1) ?? 0).toBe(bytes.length);
        ends.forEach((end, i) => {
          const size = end - (i === 0 ? 0 : ends[i - 1]!);
          expect(size).toBeLessThanOrEqual(16 << 10);
          if (i < ends.length - 1) expect(size).toBeGreaterThanOrEqual(1 << 10);
        });
        const hash = store.put(bytes);
        expect(hash).toBe(contentHash(bytes));
        expect(store.get(hash)!.equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it('keeps a one-line edit of a 100 KB file for about a chunk, not the file again', async () => {
    const before = sourceText(100_000, 7);
    const lines = before.split('\n');
    lines[700] += ' // edited';
    const after = lines.join('\n');
    store.put(Buffer.from(before));
    const { storedBytes: first } = store.totals();
    await store.putAsync(Buffer.from(after));
    const grew = store.totals().storedBytes - first;
    // The edited chunk (at most 16 KiB, deflated) and the new version's list of chunk hashes.
    expect(grew).toBeLessThan(8_000);
    expect(store.get(contentHash(Buffer.from(after)))!.toString()).toBe(after);
  });

  it('hands a chunked content to another store whole, which checks it and keeps it as its own chunks', () => {
    const bytes = Buffer.from(sourceText(150_000, 3));
    const hash = store.put(bytes);
    const object = store.object(hash)!;
    expect(object.encoding).toBe('deflate');
    const other = ContentStore.openFile(join(home.root, 'other.db'));
    try {
      other.adopt(object);
      expect(other.get(hash)!.equals(bytes)).toBe(true);
      expect(() => other.adopt({ ...object, hash: contentHash(Buffer.from('something else')) })).toThrow(/does not match its hash/);
    } finally {
      other.close();
    }
  });
});
