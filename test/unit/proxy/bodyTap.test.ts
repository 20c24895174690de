import { describe, expect, it } from 'vitest';
import { BodyTap, declaredLength } from '../../../electron/proxy/exchange.ts';

// A tap keeps what crossed, up to its cap, whatever length the stream declared: a declared length
// only decides where the bytes are kept while they pass.

const bytes = (n: number, from = 0): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => (from + i) % 251));

function tapped(cap: number, declared: number | null, pieces: readonly Buffer[]): ReturnType<BodyTap['body']> {
  const tap = new BodyTap(cap, declared);
  for (const piece of pieces) tap.push(piece);
  return tap.body();
}

describe('BodyTap', () => {
  it('fills one buffer of the declared length as the body passes, its own memory from start to end', () => {
    const body = bytes(20_000);
    const got = tapped(1 << 20, body.length, [body.subarray(0, 7_000), body.subarray(7_000, 16_384), body.subarray(16_384)]);
    expect(got).toEqual({ bytes: body, total: body.length, truncated: false });
    // Whole: the writer thread takes such a body's memory without copying it.
    expect(got.bytes.byteOffset).toBe(0);
    expect(got.bytes.byteLength).toBe(got.bytes.buffer.byteLength);
  });

  it('copies each piece: the chunks it is given go on to the client and may be reused', () => {
    const piece = bytes(5_000);
    const tap = new BodyTap(1 << 20, 5_000);
    tap.push(piece);
    piece.fill(0);
    expect(tap.body().bytes).toEqual(bytes(5_000));
  });

  it('keeps what came of a stream that ended short of its declared length', () => {
    const got = tapped(1 << 20, 10_000, [bytes(3_000), bytes(2_000, 3_000)]);
    expect(got).toEqual({ bytes: bytes(5_000), total: 5_000, truncated: false });
  });

  it('keeps every byte of a stream that sent more than it declared, in order', () => {
    const got = tapped(1 << 20, 4_000, [bytes(3_000), bytes(3_000, 3_000), bytes(1_000, 6_000)]);
    expect(got).toEqual({ bytes: bytes(7_000), total: 7_000, truncated: false });
  });

  it('keeps a first piece larger than the declared length whole', () => {
    expect(tapped(1 << 20, 10, [bytes(300)])).toEqual({ bytes: bytes(300), total: 300, truncated: false });
  });

  it('joins the pieces of a chunked stream, which declares no length', () => {
    const got = tapped(1 << 20, null, [bytes(100), bytes(200, 100), bytes(50, 300)]);
    expect(got).toEqual({ bytes: bytes(350), total: 350, truncated: false });
  });

  it('stops at the cap, counting every byte, and takes no more memory than the cap when the declared length is past it', () => {
    const tap = new BodyTap(10_000, 50_000);
    for (let at = 0; at < 50_000; at += 7_000) tap.push(bytes(Math.min(7_000, 50_000 - at), at));
    const got = tap.body();
    expect(got).toEqual({ bytes: bytes(10_000), total: 50_000, truncated: true });
    expect(got.bytes.buffer.byteLength).toBe(10_000);
  });

  it('stops at the cap on a stream past its declared length and the cap', () => {
    expect(tapped(1_000, 600, [bytes(500), bytes(500, 500), bytes(500, 1_000)])).toEqual({
      bytes: bytes(1_000),
      total: 1_500,
      truncated: true,
    });
  });

  it('keeps nothing of a declared length that never came (a HEAD answer)', () => {
    expect(tapped(1 << 20, 2_000_000, [])).toEqual({ bytes: Buffer.alloc(0), total: 0, truncated: false });
  });
});

describe('declaredLength', () => {
  it('reads a Content-Length, and nothing from one that is not a length', () => {
    expect(declaredLength('1234')).toBe(1234);
    expect(declaredLength(' 12 ')).toBe(12);
    expect(declaredLength(['5'])).toBe(5);
    expect(declaredLength(7)).toBe(7);
    expect(declaredLength(undefined)).toBeNull();
    expect(declaredLength('12, 12')).toBeNull();
    expect(declaredLength('-1')).toBeNull();
    expect(declaredLength('1e3')).toBeNull();
    expect(declaredLength('99999999999999999999')).toBeNull();
  });
});
