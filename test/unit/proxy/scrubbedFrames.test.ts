import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { keyForms } from '../../../electron/credentials/keyForms.ts';
import { scrubBytes } from '../../../electron/credentials/keyScrubber.ts';
import { ScrubbedFrames } from '../../../electron/proxy/scrubbedFrames.ts';
import { WsFrameReader, WsProtocolError, type WsFrame } from '../../../electron/telemetry/websocketFrames.ts';

// A WebSocket server's frames after an upgrade that carried a key up: each message reaches the
// client whole and scrubbed, however the server fragmented it, with control frames between its
// fragments, and however the bytes were split on the way; frames that cannot be read are refused.

const KEY = 'sk-ant-api03-REALkey0123456789abcdefghijklmnopqrstuvwxyzAA';
const STAND_IN = 'sk-ant-api03-STANDINzyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQAA';
const FORMS = keyForms(KEY, STAND_IN);

function frame(fin: boolean, opcode: number, payload: Buffer, mask?: Buffer): Buffer {
  const length = payload.length;
  const head =
    length < 126
      ? Buffer.from([(fin ? 0x80 : 0) | opcode, length])
      : Buffer.from([(fin ? 0x80 : 0) | opcode, 126, length >> 8, length & 0xff]);
  if (!mask) return Buffer.concat([head, payload]);
  head[1]! |= 0x80;
  return Buffer.concat([head, mask, Buffer.from(payload.map((b, i) => b ^ mask[i & 3]!))]);
}

/** Messages and control frames read back from the client's side of the stream. */
function readBack(bytes: Buffer): { messages: { opcode: string; payload: string }[]; controls: { opcode: string; payload: string }[] } {
  const frames: WsFrame[] = new WsFrameReader((size) => size).push(bytes);
  const messages: { opcode: string; payload: string }[] = [];
  const controls: { opcode: string; payload: string }[] = [];
  let current: { opcode: string; parts: Buffer[] } | null = null;
  for (const f of frames) {
    if (f.opcode === 'ping' || f.opcode === 'pong' || f.opcode === 'close') {
      controls.push({ opcode: f.opcode, payload: f.payload.toString('latin1') });
      continue;
    }
    current ??= { opcode: f.opcode, parts: [] };
    current.parts.push(f.payload);
    if (f.fin) {
      messages.push({ opcode: current.opcode, payload: Buffer.concat(current.parts).toString('latin1') });
      current = null;
    }
  }
  return { messages, controls };
}

const piece = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.constant(KEY),
  fc.constant(encodeURIComponent(KEY)),
  fc
    .tuple(fc.string({ maxLength: 4 }), fc.boolean())
    .map(([before, url]) => Buffer.from(`${before}${KEY}`).toString(url ? 'base64url' : 'base64')),
);

const message = fc.record({
  binary: fc.boolean(),
  payload: fc.array(piece, { maxLength: 5 }).map((p) => p.join('')),
  fragments: fc.array(fc.nat(), { maxLength: 3 }),
  ping: fc.boolean(),
});

describe('scrubbed WebSocket frames', () => {
  it('delivers every message whole and scrubbed, however fragmented and split (property)', () => {
    fc.assert(
      fc.property(fc.array(message, { minLength: 1, maxLength: 4 }), fc.array(fc.nat(), { maxLength: 6 }), (messages, cuts) => {
        const wire: Buffer[] = [];
        for (const m of messages) {
          const payload = Buffer.from(m.payload, 'latin1');
          const points = [...new Set(m.fragments.map((f) => f % (payload.length + 1)))].sort((a, b) => a - b);
          const parts = [0, ...points, payload.length].map((p, i, all) => payload.subarray(p, all[i + 1] ?? p)).slice(0, -1);
          parts.forEach((part, i) => {
            wire.push(frame(i === parts.length - 1, i === 0 ? (m.binary ? 2 : 1) : 0, part));
            // A ping carrying the key between two fragments.
            if (m.ping && i === 0) wire.push(frame(true, 9, Buffer.from(KEY)));
          });
        }
        const stream = Buffer.concat(wire);
        const splits = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
        const scrubbed = new ScrubbedFrames(FORMS);
        const out: Buffer[] = [];
        [0, ...splits, stream.length].forEach((p, i, all) => {
          if (i > 0) out.push(...scrubbed.push(stream.subarray(all[i - 1]!, p)));
        });
        const bytes = Buffer.concat(out);
        for (const form of FORMS) expect(bytes.indexOf(form.needle)).toBe(-1);
        const back = readBack(bytes);
        expect(back.messages).toEqual(
          messages.map((m) => ({
            opcode: m.binary ? 'binary' : 'text',
            payload: scrubBytes(FORMS, Buffer.from(m.payload, 'latin1')).toString('latin1'),
          })),
        );
        expect(back.controls).toEqual(messages.filter((m) => m.ping).map(() => ({ opcode: 'ping', payload: STAND_IN })));
      }),
      { numRuns: 300 },
    );
  });

  it('sends a message that arrived whole in one chunk as one frame', () => {
    const out = new ScrubbedFrames(FORMS).push(frame(true, 1, Buffer.from(`{"key":"${KEY}"}`)));
    expect(Buffer.concat(out)).toEqual(frame(true, 1, Buffer.from(`{"key":"${STAND_IN}"}`)));
  });

  it('refuses frames it cannot read to scrub: masked, under an extension, or out of order', () => {
    expect(() => new ScrubbedFrames(FORMS).push(frame(true, 1, Buffer.from(KEY), Buffer.from([1, 2, 3, 4])))).toThrow(WsProtocolError);
    const compressed = frame(true, 1, Buffer.from('x'));
    compressed[0]! |= 0x40;
    expect(() => new ScrubbedFrames(FORMS).push(compressed)).toThrow(/extension/);
    expect(() => new ScrubbedFrames(FORMS).push(frame(true, 0, Buffer.from('x')))).toThrow(/continuation/);
    expect(() =>
      new ScrubbedFrames(FORMS).push(Buffer.concat([frame(false, 1, Buffer.from('a')), frame(true, 2, Buffer.from('b'))])),
    ).toThrow(/new message/);
  });
});
