import type { KeyForm } from '../credentials/keyForms.ts';
import { KeyScrubber, scrubBytes } from '../credentials/keyScrubber.ts';
import { WsHeaderReader, WsProtocolError, type WsOpcode } from '../telemetry/websocketFrames.ts';

// The frames a WebSocket server sends after an upgrade on which a provider key may have gone up,
// rewritten so no form of the key reaches the client or the recorder. A message's payload is
// scrubbed as one stream across its fragments (a key split between two frames is still found), and
// the message is sent on as it is scrubbed: within each chunk read from the server, what a message
// holds goes out as one frame, fragmented across chunks (RFC 6455 lets an intermediary change the
// fragmentation of a message that uses no extension; the proxy offers none upstream). Control
// frames are scrubbed whole. A frame that cannot be read to scrub it (masked, an extension's RSV
// bits, a reserved opcode) ends the connection rather than pass unread. Pure: bytes in, bytes out.

const OPCODE_NUMBER: Readonly<Record<WsOpcode, number>> = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 };
/** A control frame's payload limit (RFC 6455 section 5.5). */
const CONTROL_PAYLOAD = 125;

function frameHeader(fin: boolean, opcode: number, length: number): Buffer {
  const first = (fin ? 0x80 : 0) | opcode;
  if (length < 126) return Buffer.from([first, length]);
  if (length < 0x10000) {
    const header = Buffer.from([first, 126, 0, 0]);
    header.writeUInt16BE(length, 2);
    return header;
  }
  const header = Buffer.alloc(10);
  header[0] = first;
  header[1] = 127;
  header.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
  header.writeUInt32BE(length >>> 0, 6);
  return header;
}

interface Frame {
  readonly opcode: WsOpcode;
  readonly fin: boolean;
  remaining: number;
  /** A control frame's payload so far: scrubbed and sent once whole. */
  readonly control: Buffer[] | null;
}

interface Message {
  readonly opcode: number;
  readonly scrubber: KeyScrubber;
  /** A first fragment has gone out: the rest go as continuations. */
  started: boolean;
}

export class ScrubbedFrames {
  private readonly headers = new WsHeaderReader();
  private frame: Frame | null = null;
  private message: Message | null = null;
  /** The current message's scrubbed bytes from this chunk, not yet framed. */
  private pieces: Buffer[] = [];
  private out: Buffer[] = [];

  constructor(private readonly forms: readonly KeyForm[]) {}

  /** The frames to send for this chunk from the server; throws WsProtocolError for frames that cannot be scrubbed. */
  push(chunk: Buffer): Buffer[] {
    let at = 0;
    while (at < chunk.length) {
      if (!this.frame) {
        at = this.readHeader(chunk, at);
        continue;
      }
      const frame = this.frame;
      const take = Math.min(frame.remaining, chunk.length - at);
      const piece = chunk.subarray(at, at + take);
      if (frame.control) frame.control.push(Buffer.from(piece));
      else this.pieces.push(this.message!.scrubber.push(piece));
      frame.remaining -= take;
      at += take;
      if (frame.remaining === 0) this.complete();
    }
    this.sendMessagePart(false);
    const out = this.out;
    this.out = [];
    return out;
  }

  private readHeader(chunk: Buffer, at: number): number {
    const { header: parsed, next } = this.headers.read(chunk, at);
    if (parsed === null) return next;
    if (parsed.mask) throw new WsProtocolError('the server sent a masked frame');
    if (parsed.rsv !== 0)
      throw new WsProtocolError('the server sent a frame under an extension (RSV bits set), which cannot be read to scrub it');
    const control = parsed.opcode === 'close' || parsed.opcode === 'ping' || parsed.opcode === 'pong';
    if (parsed.opcode === 'text' || parsed.opcode === 'binary') {
      if (this.message) throw new WsProtocolError('a new message began before the last one ended');
      this.message = { opcode: OPCODE_NUMBER[parsed.opcode], scrubber: new KeyScrubber(this.forms), started: false };
    } else if (parsed.opcode === 'continuation' && !this.message) throw new WsProtocolError('a continuation frame outside a message');
    this.frame = { opcode: parsed.opcode, fin: parsed.fin, remaining: parsed.size, control: control ? [] : null };
    if (parsed.size === 0) this.complete();
    return next;
  }

  private complete(): void {
    const frame = this.frame!;
    this.frame = null;
    if (frame.control) {
      // A control frame may come between a message's fragments: what the message had so far goes first.
      this.sendMessagePart(false);
      const payload = scrubBytes(this.forms, Buffer.concat(frame.control)).subarray(0, CONTROL_PAYLOAD);
      this.out.push(frameHeader(true, OPCODE_NUMBER[frame.opcode], payload.length), payload);
      return;
    }
    if (!frame.fin) return;
    this.pieces.push(this.message!.scrubber.end());
    this.sendMessagePart(true);
    this.message = null;
  }

  /** The current message's scrubbed bytes as one frame: its last when `fin`, else a fragment (none when there is nothing yet). */
  private sendMessagePart(fin: boolean): void {
    const message = this.message;
    if (!message) return;
    const payload = Buffer.concat(this.pieces);
    this.pieces = [];
    if (payload.length === 0 && !fin) return;
    this.out.push(frameHeader(fin, message.started ? 0 : message.opcode, payload.length), payload);
    message.started = true;
  }
}
