import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { UpgradedStreamLedger, type FrameRow } from '../../../electron/telemetry/upgradedStream.ts';
import { WsFrameReader, WsProtocolError, type WsOpcode } from '../../../electron/telemetry/websocketFrames.ts';

// The frame reader is fed chunk sequences split at every boundary, as a socket would split them.

const CODES: Record<WsOpcode, number> = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 };

/** One frame as RFC 6455 encodes it; `mask` present for client frames. */
function encode(opcode: WsOpcode, payload: Buffer, fin: boolean, mask: Buffer | null, longForm = false): Buffer {
  const size = payload.length;
  const lengthBytes = longForm || size > 0xffff ? 8 : size > 125 ? 2 : 0;
  const head = Buffer.alloc(2 + lengthBytes + (mask ? 4 : 0));
  head[0] = (fin ? 0x80 : 0) | CODES[opcode];
  head[1] = (mask ? 0x80 : 0) | (lengthBytes === 8 ? 127 : lengthBytes === 2 ? 126 : size);
  if (lengthBytes === 2) head.writeUInt16BE(size, 2);
  if (lengthBytes === 8) head.writeBigUInt64BE(BigInt(size), 2);
  if (!mask) return Buffer.concat([head, payload]);
  mask.copy(head, 2 + lengthBytes);
  return Buffer.concat([head, Buffer.from(payload.map((b, i) => b ^ mask[i & 3]!))]);
}

function splitAt(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let at = 0;
  for (const p of [...points, bytes.length]) {
    pieces.push(bytes.subarray(at, p));
    at = p;
  }
  return pieces;
}

const frameArb = fc
  .record({
    opcode: fc.constantFrom<WsOpcode>('text', 'binary', 'continuation', 'ping', 'pong', 'close'),
    payload: fc.uint8Array({ maxLength: 300 }),
    fin: fc.boolean(),
    mask: fc.option(fc.uint8Array({ minLength: 4, maxLength: 4 }), { nil: null }),
    longForm: fc.boolean(),
  })
  .map((f) => {
    const control = f.opcode === 'close' || f.opcode === 'ping' || f.opcode === 'pong';
    return {
      ...f,
      payload: Buffer.from(control ? f.payload.slice(0, 125) : f.payload),
      fin: control ? true : f.fin,
      mask: f.mask ? Buffer.from(f.mask) : null,
    };
  });

describe('WebSocket frame reader', () => {
  it('reads back every frame, unmasked, however the bytes are split (property)', () => {
    fc.assert(
      fc.property(fc.array(frameArb, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), (frames, cuts) => {
        const wire = Buffer.concat(frames.map((f) => encode(f.opcode, f.payload, f.fin, f.mask, f.longForm)));
        const reader = new WsFrameReader((size) => size);
        const read = splitAt(wire, cuts).flatMap((piece) => reader.push(piece));
        expect(
          read.map((f) => ({ opcode: f.opcode, fin: f.fin, payload: f.payload.toString('hex'), size: f.size, truncated: f.truncated })),
        ).toEqual(
          frames.map((f) => ({
            opcode: f.opcode,
            fin: f.fin,
            payload: f.payload.toString('hex'),
            size: f.payload.length,
            truncated: false,
          })),
        );
        expect(reader.pending()).toBeNull();
      }),
    );
  });

  it('keeps only the bytes it is allowed, counting the rest, and reports a frame cut by the end', () => {
    const reader = new WsFrameReader((size) => Math.min(size, 4));
    const big = encode('binary', Buffer.alloc(70_000, 7), true, Buffer.from([1, 2, 3, 4]));
    const [frame] = reader.push(big);
    expect(frame).toMatchObject({ opcode: 'binary', size: 70_000, truncated: true });
    expect(frame!.payload).toEqual(Buffer.alloc(4, 7));
    reader.push(encode('text', Buffer.from('hello world'), true, null).subarray(0, 6));
    expect(reader.pending()).toMatchObject({ opcode: 'text', size: 11, truncated: true, payload: Buffer.from('hell') });
  });

  it('throws only WsProtocolError on arbitrary bytes, and keeps throwing once broken (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const reader = new WsFrameReader((size) => size);
        let broken = false;
        try {
          reader.push(Buffer.from(bytes));
        } catch (err) {
          expect(err).toBeInstanceOf(WsProtocolError);
          broken = true;
        }
        if (broken) expect(() => reader.push(Buffer.from([0x81, 0]))).toThrow(WsProtocolError);
      }),
    );
  });

  it('refuses a reserved opcode, a fragmented or oversized control frame, and a length past 2^53', () => {
    expect(() => new WsFrameReader(() => 0).push(Buffer.from([0x83, 0]))).toThrow(/reserved opcode 0x3/);
    expect(() => new WsFrameReader(() => 0).push(Buffer.from([0x09, 0]))).toThrow(/ping frame must be whole/);
    expect(() => new WsFrameReader(() => 0).push(Buffer.from([0x88, 126, 0, 200]))).toThrow(/at most 125 bytes/);
    expect(() => new WsFrameReader(() => 0).push(Buffer.from([0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1]))).toThrow(/beyond 2\^53/);
  });
});

describe('upgraded stream ledger', () => {
  it('records frames both ways within one byte budget, then sizes only; text as text, binary as bytes', () => {
    const rows: FrameRow[] = [];
    const ledger = new UpgradedStreamLedger(true, 8, (r) => rows.push(r));
    ledger.sent(encode('text', Buffer.from('hello'), true, Buffer.from([9, 9, 9, 9])));
    ledger.received(encode('binary', Buffer.from([1, 2, 3, 4, 5]), true, null));
    ledger.received(encode('text', Buffer.from('more'), true, null));
    expect(rows.map((r) => [r.direction, r.opcode, r.size, r.content, r.body?.toString('hex') ?? null, r.truncated])).toEqual([
      ['sent', 'text', 5, 'hello', null, false],
      ['received', 'binary', 5, null, '010203', true],
      ['received', 'text', 4, null, null, true],
    ]);
    expect([ledger.bytesSent, ledger.bytesReceived]).toEqual([11, 13]);
    expect(ledger.parseError).toBeNull();
  });

  it('records a direction that stops speaking WebSocket as raw chunks, and says why, losing no byte', () => {
    const rows: FrameRow[] = [];
    const ledger = new UpgradedStreamLedger(true, 1 << 20, (r) => rows.push(r));
    ledger.sent(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    ledger.sent(Buffer.from('more'));
    expect(ledger.parseError).toMatch(/WebSocket frames from the client: reserved opcode/);
    expect(rows.map((r) => [r.opcode, r.body?.toString()])).toEqual([
      ['raw', 'GET / HTTP/1.1\r\n\r\n'],
      ['raw', 'more'],
    ]);
  });

  it('records another upgraded protocol as raw chunks', () => {
    const rows: FrameRow[] = [];
    const ledger = new UpgradedStreamLedger(false, 3, (r) => rows.push(r));
    ledger.received(Buffer.from('PRI * HTTP/2.0'));
    expect(rows).toMatchObject([{ direction: 'received', opcode: 'raw', size: 14, storedBytes: 3, truncated: true }]);
  });
});
