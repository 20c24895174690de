// WebSocket frames (RFC 6455 section 5.2) read from one direction of a connection: bytes in, frames
// out, no sockets. A payload is never held whole: only the first bytes the caller wants kept are
// copied (unmasked), the rest is counted, so a gigabyte frame costs its kept prefix.

export type WsOpcode = 'continuation' | 'text' | 'binary' | 'close' | 'ping' | 'pong';

export interface WsFrame {
  readonly fin: boolean;
  readonly opcode: WsOpcode;
  /** The RSV1-3 bits; non-zero only under an extension such as permessage-deflate. */
  readonly rsv: number;
  /** Payload length as the header declared it. */
  readonly size: number;
  /** The kept prefix of the payload, unmasked. */
  readonly payload: Buffer;
  readonly truncated: boolean;
}

export class WsProtocolError extends Error {
  override name = 'WsProtocolError';
}

const OPCODES: Readonly<Record<number, WsOpcode>> = { 0: 'continuation', 1: 'text', 2: 'binary', 8: 'close', 9: 'ping', 10: 'pong' };
/** The longest frame header: 2 bytes, an 8-byte length, a 4-byte mask. */
const MAX_HEADER = 14;

interface InFlight {
  readonly fin: boolean;
  readonly opcode: WsOpcode;
  readonly rsv: number;
  readonly size: number;
  readonly mask: Buffer | null;
  readonly kept: Buffer;
  /** Payload bytes seen so far (kept or not). */
  seen: number;
}

/** A frame header gathered across chunks. */
export class WsHeaderReader {
  private held = Buffer.alloc(0);

  /**
   * Consumes header bytes from `chunk` at `at`: the header once it is whole (`next` is then where
   * its payload starts), else null with the chunk used up. Throws WsProtocolError as parseHeader does.
   */
  read(chunk: Buffer, at: number): { readonly header: WsHeader | null; readonly next: number } {
    const wanted = Math.min(MAX_HEADER - this.held.length, chunk.length - at);
    const bytes = Buffer.concat([this.held, chunk.subarray(at, at + wanted)]);
    const header = parseHeader(bytes);
    if (header === null) {
      this.held = bytes;
      return { header, next: at + wanted };
    }
    // Bytes past the header in `bytes` came from this chunk: step back over them.
    const next = at + header.headerLength - this.held.length;
    this.held = Buffer.alloc(0);
    return { header, next };
  }
}

export class WsFrameReader {
  private readonly headers = new WsHeaderReader();
  private frame: InFlight | null = null;
  private broken: WsProtocolError | null = null;

  /** `keep(size)`: how many bytes of a frame of this declared size to keep (a byte budget). */
  constructor(private readonly keep: (size: number) => number) {}

  /** The frames completed by this chunk. Throws WsProtocolError once the stream breaks the protocol, and on every push after. */
  push(chunk: Buffer): WsFrame[] {
    if (this.broken) throw this.broken;
    const out: WsFrame[] = [];
    let at = 0;
    try {
      while (at < chunk.length) {
        if (!this.frame) {
          at = this.readHeader(chunk, at);
          if (this.frame && (this.frame as InFlight).size === 0) out.push(this.complete());
          continue;
        }
        const frame: InFlight = this.frame;
        const take = Math.min(frame.size - frame.seen, chunk.length - at);
        const room = frame.kept.length - Math.min(frame.seen, frame.kept.length);
        if (room > 0) {
          const start = frame.seen;
          const piece = chunk.subarray(at, at + Math.min(room, take));
          for (let i = 0; i < piece.length; i++) frame.kept[start + i] = frame.mask ? piece[i]! ^ frame.mask[(start + i) & 3]! : piece[i]!;
        }
        frame.seen += take;
        at += take;
        if (frame.seen === frame.size) out.push(this.complete());
      }
    } catch (err) {
      if (err instanceof WsProtocolError) this.broken = err;
      throw err;
    }
    return out;
  }

  /** The frame still arriving when the stream ended, as far as it came; null between frames. */
  pending(): WsFrame | null {
    const frame = this.frame;
    if (!frame) return null;
    const kept = frame.kept.subarray(0, Math.min(frame.seen, frame.kept.length));
    return { fin: frame.fin, opcode: frame.opcode, rsv: frame.rsv, size: frame.size, payload: kept, truncated: true };
  }

  private complete(): WsFrame {
    const frame = this.frame!;
    this.frame = null;
    return {
      fin: frame.fin,
      opcode: frame.opcode,
      rsv: frame.rsv,
      size: frame.size,
      payload: frame.kept,
      truncated: frame.kept.length < frame.size,
    };
  }

  /** Consumes header bytes from `chunk` at `at`; starts a frame once the header is whole. Returns the new position. */
  private readHeader(chunk: Buffer, at: number): number {
    const { header: parsed, next } = this.headers.read(chunk, at);
    if (parsed === null) return next;
    const kept = Buffer.alloc(Math.max(0, Math.min(parsed.size, Math.floor(this.keep(parsed.size)))));
    this.frame = { fin: parsed.fin, opcode: parsed.opcode, rsv: parsed.rsv, size: parsed.size, mask: parsed.mask, kept, seen: 0 };
    return next;
  }
}

export interface WsHeader {
  readonly fin: boolean;
  readonly rsv: number;
  readonly opcode: WsOpcode;
  readonly size: number;
  readonly mask: Buffer | null;
  readonly headerLength: number;
}

/** A frame header from the start of `bytes`, or null when more bytes are needed; throws WsProtocolError for one the protocol forbids. */
function parseHeader(bytes: Buffer): WsHeader | null {
  if (bytes.length < 2) return null;
  const b0 = bytes[0]!;
  const b1 = bytes[1]!;
  const opcode = OPCODES[b0 & 0x0f];
  if (opcode === undefined) throw new WsProtocolError(`reserved opcode 0x${(b0 & 0x0f).toString(16)}`);
  const fin = (b0 & 0x80) !== 0;
  const masked = (b1 & 0x80) !== 0;
  const short = b1 & 0x7f;
  const lengthBytes = short === 126 ? 2 : short === 127 ? 8 : 0;
  const headerLength = 2 + lengthBytes + (masked ? 4 : 0);
  if (bytes.length < headerLength) return null;
  let size = short;
  if (short === 126) size = bytes.readUInt16BE(2);
  else if (short === 127) {
    const high = bytes.readUInt32BE(2);
    // The most significant bit must be 0; past 2^53 a length is not a safe JavaScript number.
    if (high > 0x1fffff) throw new WsProtocolError('frame length beyond 2^53');
    size = high * 2 ** 32 + bytes.readUInt32BE(6);
  }
  const control = opcode === 'close' || opcode === 'ping' || opcode === 'pong';
  if (control && (!fin || size > 125)) throw new WsProtocolError(`a ${opcode} frame must be whole and at most 125 bytes`);
  const mask = masked ? Buffer.from(bytes.subarray(2 + lengthBytes, headerLength)) : null;
  return { fin, rsv: (b0 >> 4) & 0x07, opcode, size, mask, headerLength };
}

/** A close frame's payload as text: its status code, then its reason. */
export function closeFrameText(payload: Buffer): string {
  if (payload.length < 2) return '';
  const reason = payload.subarray(2).toString('utf8');
  return reason === '' ? String(payload.readUInt16BE(0)) : `${payload.readUInt16BE(0)} ${reason}`;
}
