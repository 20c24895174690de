// The guest agent's wire format (native/agent/PROTOCOL.md): a 12-byte little-endian header
// (payload length, stream id, type, flags, reserved) and a payload of at most 64 KiB. Pure: bytes
// in, frames out, so the decoder is fuzzed without a socket.

export const PROTOCOL_VERSION = 2;
export const MAX_PAYLOAD = 65_536;
export const HEADER_BYTES = 12;

export const FrameType = {
  HELLO: 0x01,
  CONTROL: 0x02,
  OPEN: 0x03,
  DATA: 0x04,
  WINDOW: 0x05,
  CLOSE: 0x06,
  RESET: 0x07,
  EXIT: 0x08,
  RESIZE: 0x09,
  EVENT: 0x0a,
  ERROR: 0x0f,
} as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

const CONTROL_STREAM_TYPES = new Set<number>([FrameType.HELLO, FrameType.CONTROL, FrameType.EVENT, FrameType.ERROR]);
const STREAM_TYPES = new Set<number>([
  FrameType.OPEN,
  FrameType.DATA,
  FrameType.WINDOW,
  FrameType.CLOSE,
  FrameType.RESET,
  FrameType.EXIT,
  FrameType.RESIZE,
]);
/** Types whose payload has one exact size. */
const FIXED_SIZE = new Map<number, number>([
  [FrameType.WINDOW, 4],
  [FrameType.CLOSE, 0],
  [FrameType.RESIZE, 4],
]);

export interface Frame {
  readonly type: FrameType;
  readonly stream: number;
  readonly flags: number;
  readonly payload: Buffer;
}

export class ProtocolError extends Error {
  override name = 'ProtocolError';
}

export function encodeFrame(type: FrameType, stream: number, payload: Uint8Array = new Uint8Array(0), flags = 0): Buffer {
  if (payload.length > MAX_PAYLOAD) throw new RangeError(`frame payload of ${payload.length} bytes is over ${MAX_PAYLOAD}`);
  const frame = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  frame.writeUInt32LE(payload.length, 0);
  frame.writeUInt32LE(stream >>> 0, 4);
  frame.writeUInt8(type, 8);
  frame.writeUInt8(flags, 9);
  frame.writeUInt16LE(0, 10);
  frame.set(payload, HEADER_BYTES);
  return frame;
}

export const encodeJsonFrame = (type: FrameType, stream: number, value: unknown): Buffer =>
  encodeFrame(type, stream, Buffer.from(JSON.stringify(value)));

export function encodeU32(value: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32LE(value >>> 0, 0);
  return b;
}

export function encodeResize(cols: number, rows: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt16LE(Math.max(1, Math.min(0xffff, cols)), 0);
  b.writeUInt16LE(Math.max(1, Math.min(0xffff, rows)), 2);
  return b;
}

/** Why a header is not a valid frame, or null when it is. */
function headerProblem(length: number, stream: number, type: number, reserved: number): string | null {
  if (length > MAX_PAYLOAD) return `frame payload of ${length} bytes is over the ${MAX_PAYLOAD}-byte maximum`;
  if (reserved !== 0) return `frame reserved field is ${reserved}, not 0`;
  if (stream === 0 && !CONTROL_STREAM_TYPES.has(type))
    return STREAM_TYPES.has(type) ? `frame type 0x${type.toString(16)} needs a stream id` : `unknown frame type 0x${type.toString(16)}`;
  if (stream !== 0 && !STREAM_TYPES.has(type))
    return CONTROL_STREAM_TYPES.has(type)
      ? `frame type 0x${type.toString(16)} belongs on stream 0`
      : `unknown frame type 0x${type.toString(16)}`;
  const size = FIXED_SIZE.get(type);
  if (size !== undefined && length !== size) return `frame type 0x${type.toString(16)} carries ${size} bytes, not ${length}`;
  return null;
}

/**
 * Cuts a byte stream into frames. Chunks may split or merge frames anywhere. The first invalid
 * header throws a ProtocolError and the decoder stays failed: past a bad header nothing that
 * follows can be trusted to be aligned.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private failure: ProtocolError | null = null;

  push(chunk: Uint8Array): Frame[] {
    if (this.failure) throw this.failure;
    if (chunk.length > 0) {
      this.chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length));
      this.buffered += chunk.length;
    }
    const frames: Frame[] = [];
    while (this.buffered >= HEADER_BYTES) {
      const head = this.peek(HEADER_BYTES);
      const length = head.readUInt32LE(0);
      const stream = head.readUInt32LE(4);
      const type = head.readUInt8(8);
      const problem = headerProblem(length, stream, type, head.readUInt16LE(10));
      if (problem) {
        this.failure = new ProtocolError(problem);
        throw this.failure;
      }
      if (this.buffered < HEADER_BYTES + length) break;
      const whole = this.take(HEADER_BYTES + length);
      frames.push({ type: type as FrameType, stream, flags: head.readUInt8(9), payload: whole.subarray(HEADER_BYTES) });
    }
    return frames;
  }

  /** Bytes held for a frame not yet complete. */
  get pending(): number {
    return this.buffered;
  }

  private peek(n: number): Buffer {
    const first = this.chunks[0]!;
    if (first.length >= n) return first.subarray(0, n);
    this.chunks = [Buffer.concat(this.chunks, this.buffered)];
    return this.chunks[0]!.subarray(0, n);
  }

  private take(n: number): Buffer {
    let first = this.chunks[0]!;
    if (first.length < n) {
      first = Buffer.concat(this.chunks, this.buffered);
      this.chunks = [first];
    }
    const out = first.subarray(0, n);
    if (first.length === n) this.chunks.shift();
    else this.chunks[0] = first.subarray(n);
    this.buffered -= n;
    return out;
  }
}
