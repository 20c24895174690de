import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeFrame, FrameDecoder, FrameType, HEADER_BYTES, MAX_PAYLOAD, ProtocolError, type Frame } from '../../../electron/vm/frame.ts';

const streamTypes = [FrameType.OPEN, FrameType.DATA, FrameType.RESET, FrameType.EXIT] as const;
const controlTypes = [FrameType.HELLO, FrameType.CONTROL, FrameType.EVENT, FrameType.ERROR] as const;

const frameArb = fc.oneof(
  fc.record({
    type: fc.constantFrom(...streamTypes),
    stream: fc.integer({ min: 1, max: 0xffffffff }),
    flags: fc.integer({ min: 0, max: 1 }),
    payload: fc.uint8Array({ maxLength: 300 }),
  }),
  fc.record({
    type: fc.constantFrom(...controlTypes),
    stream: fc.constant(0),
    flags: fc.constant(0),
    payload: fc.uint8Array({ maxLength: 300 }),
  }),
  fc.record({
    type: fc.constant(FrameType.WINDOW),
    stream: fc.integer({ min: 1, max: 1000 }),
    flags: fc.constant(0),
    payload: fc.uint8Array({ minLength: 4, maxLength: 4 }),
  }),
);

const plain = (f: Frame) => ({ type: f.type, stream: f.stream, flags: f.flags, payload: [...f.payload] });

describe('frame codec', () => {
  it('decodes what it encodes however the bytes are split into chunks', () => {
    fc.assert(
      fc.property(
        fc.array(frameArb, { maxLength: 20 }),
        fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 10 }),
        (frames, cuts) => {
          const wire = Buffer.concat(frames.map((f) => encodeFrame(f.type, f.stream, f.payload, f.flags)));
          const decoder = new FrameDecoder();
          const out: Frame[] = [];
          let at = 0;
          let i = 0;
          while (at < wire.length) {
            const n = cuts[i++ % cuts.length]!;
            out.push(...decoder.push(wire.subarray(at, at + n)));
            at += n;
          }
          expect(out.map(plain)).toEqual(frames.map((f) => ({ ...f, payload: [...f.payload] })));
          expect(decoder.pending).toBe(0);
        },
      ),
    );
  });

  it('never throws anything but a ProtocolError on arbitrary bytes, and holds at most one frame', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 200 }), { maxLength: 20 }), (chunks) => {
        const decoder = new FrameDecoder();
        try {
          for (const c of chunks) decoder.push(c);
        } catch (err) {
          expect(err).toBeInstanceOf(ProtocolError);
        }
        expect(decoder.pending).toBeLessThanOrEqual(HEADER_BYTES + MAX_PAYLOAD + 200 * 20);
      }),
    );
  });

  const header = (length: number, stream: number, type: number, reserved = 0): Buffer => {
    const b = Buffer.alloc(HEADER_BYTES);
    b.writeUInt32LE(length, 0);
    b.writeUInt32LE(stream, 4);
    b.writeUInt8(type, 8);
    b.writeUInt16LE(reserved, 10);
    return b;
  };

  it.each([
    ['an oversized payload, before any of it arrives', header(MAX_PAYLOAD + 1, 1, FrameType.DATA), /over the 65536-byte maximum/],
    ['an unknown type', header(0, 0, 0x42), /unknown frame type 0x42/],
    ['a nonzero reserved field', header(0, 1, FrameType.DATA, 7), /reserved field is 7/],
    ['a stream frame on stream 0', header(0, 0, FrameType.DATA), /needs a stream id/],
    ['a control frame on a stream', header(0, 3, FrameType.HELLO), /belongs on stream 0/],
    ['a WINDOW of the wrong size', header(2, 3, FrameType.WINDOW), /carries 4 bytes, not 2/],
  ])('refuses %s, and stays refused', (_what, bytes, message) => {
    const decoder = new FrameDecoder();
    expect(() => decoder.push(bytes)).toThrow(message);
    expect(() => decoder.push(encodeFrame(FrameType.CONTROL, 0, Buffer.from('{}')))).toThrow(message);
  });

  it('refuses to encode a payload over the maximum', () => {
    expect(() => encodeFrame(FrameType.DATA, 1, Buffer.alloc(MAX_PAYLOAD + 1))).toThrow(RangeError);
  });
});
