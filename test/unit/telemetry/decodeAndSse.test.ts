import fc from 'fast-check';
import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeBody } from '../../../electron/telemetry/decodeBody.ts';
import { parseSse, SseDecoder } from '../../../electron/telemetry/sse.ts';

const body = Buffer.from('{"model":"claude","text":"zstd body"}');
// `zstd -c` of the body above: fzstd only decompresses, so the fixture was made with the CLI.
const ZSTD = Buffer.from('28b52ffd04582901007b226d6f64656c223a22636c61756465222c2274657874223a227a73746420626f6479227dd4df7874', 'hex');

describe('decodeBody', () => {
  it('undoes gzip, deflate (zlib and raw), br and zstd', async () => {
    expect((await decodeBody(gzipSync(body), 'gzip', 1 << 20)).bytes).toEqual(body);
    expect((await decodeBody(deflateSync(body), 'deflate', 1 << 20)).bytes).toEqual(body);
    expect((await decodeBody(deflateRawSync(body), 'deflate', 1 << 20)).bytes).toEqual(body);
    expect((await decodeBody(brotliCompressSync(body), 'br', 1 << 20)).bytes).toEqual(body);
    expect((await decodeBody(ZSTD, 'zstd', 1 << 20)).bytes).toEqual(body);
    expect((await decodeBody(gzipSync(brotliCompressSync(body)), 'br, gzip', 1 << 20)).bytes).toEqual(body);
    expect((await decodeBody(body, undefined, 1 << 20)).bytes).toEqual(body);
  });

  it('stops a gzip bomb at the cap instead of inflating it', async () => {
    const bomb = gzipSync(Buffer.alloc(64 << 20));
    expect(bomb.length).toBeLessThan(100_000);
    const out = await decodeBody(bomb, 'gzip', 1 << 20);
    expect(out.truncated).toBe(true);
    expect(out.bytes.length).toBe(1 << 20);
    const br = await decodeBody(brotliCompressSync(Buffer.alloc(8 << 20)), 'br', 1 << 20);
    expect(br.truncated).toBe(true);
  });

  it('yields what a cut body holds, and reports an undecodable one without losing it', async () => {
    const long = Buffer.from('x'.repeat(100_000));
    const cut = gzipSync(long).subarray(0, 200);
    const out = await decodeBody(cut, 'gzip', 1 << 20);
    expect(out.error).toBeUndefined();
    expect(out.bytes.length).toBeGreaterThan(0);
    const garbage = await decodeBody(Buffer.from('not gzip at all'), 'gzip', 1 << 20);
    expect(garbage.error).toMatch(/gzip/);
    expect(garbage.bytes.toString()).toBe('not gzip at all');
    expect((await decodeBody(body, 'compress', 1 << 20)).error).toMatch(/unsupported content-encoding compress/);
  });

  it('never throws on arbitrary bytes and codings (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ maxLength: 300 }),
        fc.constantFrom('gzip', 'deflate', 'br', 'zstd', 'gzip, br', 'identity', 'weird'),
        async (bytes, coding) => {
          const out = await decodeBody(Buffer.from(bytes), coding, 4096);
          expect(out.bytes.length).toBeLessThanOrEqual(Math.max(4096, bytes.length));
        },
      ),
      { numRuns: 1500 },
    );
  });
});

describe('SSE decoder', () => {
  const stream = 'event: message_start\r\ndata: {"a":1}\r\n\r\n: comment\n\ndata: line one\ndata: line two\n\nevent: ping\ndata: ü€😀\n\n';
  const expected = [
    { event: 'message_start', data: '{"a":1}' },
    { event: 'message', data: 'line one\nline two' },
    { event: 'ping', data: 'ü€😀' },
  ];

  it('decodes a stream split at every byte boundary into the same events', () => {
    const bytes = Buffer.from(stream);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const d = new SseDecoder();
      const events = [...d.push(bytes.subarray(0, cut)), ...d.push(bytes.subarray(cut)), ...d.end()];
      expect(events, `cut at ${cut}`).toEqual(expected);
    }
  });

  it('decodes a stream fed one byte at a time', () => {
    const d = new SseDecoder();
    const events = [...Buffer.from(stream)].flatMap((b) => d.push(Uint8Array.of(b)));
    expect(events).toEqual(expected);
  });

  it('does not dispatch an event cut before its blank line, and says the stream was incomplete', () => {
    const cut = parseSse(Buffer.from('data: {"x":1}\n\ndata: {"partial"'));
    expect(cut.events).toEqual([{ event: 'message', data: '{"x":1}' }]);
    expect(cut.complete).toBe(false);
    expect(parseSse(Buffer.from('data: 1\n\n')).complete).toBe(true);
  });

  it('matches a one-shot decode for any chunking of any input (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', 'é', ':', ' ', '\n', '\r', 'data', 'event', '😀') }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (text, cuts) => {
          const bytes = Buffer.from(text);
          const whole = new SseDecoder();
          const reference = [...whole.push(bytes), ...whole.end()];
          const pieces = new SseDecoder();
          const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
          let at = 0;
          const got = [];
          for (const p of points) {
            got.push(...pieces.push(bytes.subarray(at, p)));
            at = p;
          }
          got.push(...pieces.push(bytes.subarray(at)), ...pieces.end());
          expect(got).toEqual(reference);
        },
      ),
      { numRuns: 1000 },
    );
  });
});
