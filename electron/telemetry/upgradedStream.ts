import { closeFrameText, WsFrameReader, WsProtocolError, type WsFrame, type WsOpcode } from './websocketFrames.ts';

// What crossed an upgraded connection, as ws_frames rows: WebSocket frames in each direction, or,
// for any other upgraded protocol (and for a direction whose frames stop parsing), the raw chunks.
// Content is kept up to one byte budget per connection, shared by both directions; every frame's
// size is recorded whatever the budget says.

export type Direction = 'sent' | 'received';

export interface FrameRow {
  readonly at: Date;
  readonly direction: Direction;
  readonly opcode: WsOpcode | 'raw';
  readonly fin: boolean;
  readonly size: number;
  /** Text frames and close reasons, when the bytes are whole UTF-8. */
  readonly content: string | null;
  /** Everything else that was kept, as it was (unmasked). */
  readonly body: Buffer | null;
  readonly storedBytes: number;
  readonly truncated: boolean;
}

interface DirectionState {
  reader: WsFrameReader | null;
  /** The type of the message whose continuation frames are arriving. */
  messageType: 'text' | 'binary';
  bytes: number;
}

function wholeUtf8(bytes: Buffer): string | null {
  const text = bytes.toString('utf8');
  return Buffer.byteLength(text) === bytes.length && !text.includes('\uFFFD') ? text : null;
}

export class UpgradedStreamLedger {
  private budget: number;
  private readonly directions: Record<Direction, DirectionState>;
  /** The first protocol violation, per direction; the direction is recorded raw after it. */
  parseError: string | null = null;

  constructor(
    websocket: boolean,
    budget: number,
    private readonly emit: (row: FrameRow) => void,
  ) {
    this.budget = budget;
    const state = (): DirectionState => ({
      reader: websocket ? new WsFrameReader((size) => this.take(size)) : null,
      messageType: 'binary',
      bytes: 0,
    });
    this.directions = { sent: state(), received: state() };
  }

  get bytesSent(): number {
    return this.directions.sent.bytes;
  }

  get bytesReceived(): number {
    return this.directions.received.bytes;
  }

  sent(chunk: Buffer): void {
    this.push('sent', chunk);
  }

  received(chunk: Buffer): void {
    this.push('received', chunk);
  }

  /** The connection closed: a frame cut short is recorded as far as it came. */
  end(): void {
    for (const direction of ['sent', 'received'] as const) {
      const partial = this.directions[direction].reader?.pending();
      if (partial) this.frame(direction, partial);
    }
  }

  private take(size: number): number {
    const kept = Math.min(size, this.budget);
    this.budget -= kept;
    return kept;
  }

  private push(direction: Direction, chunk: Buffer): void {
    const state = this.directions[direction];
    state.bytes += chunk.length;
    if (state.reader) {
      try {
        for (const frame of state.reader.push(chunk)) this.frame(direction, frame);
        return;
      } catch (err) {
        if (!(err instanceof WsProtocolError)) throw err;
        this.parseError ??= `WebSocket frames ${direction === 'sent' ? 'from the client' : 'from the server'}: ${err.message}`;
        state.reader = null;
        // The chunk that broke the protocol is recorded raw whole: which of its bytes were frames is unknowable.
      }
    }
    const kept = chunk.subarray(0, this.take(chunk.length));
    this.emit({
      at: new Date(),
      direction,
      opcode: 'raw',
      fin: true,
      size: chunk.length,
      content: null,
      body: Buffer.from(kept),
      storedBytes: kept.length,
      truncated: kept.length < chunk.length,
    });
  }

  private frame(direction: Direction, frame: WsFrame): void {
    const state = this.directions[direction];
    if (frame.opcode === 'text' || frame.opcode === 'binary') state.messageType = frame.opcode;
    const textual = frame.opcode === 'text' || (frame.opcode === 'continuation' && state.messageType === 'text');
    const kept = frame.payload.length > 0 || frame.size === 0;
    const content = !kept
      ? null
      : frame.opcode === 'close'
        ? closeFrameText(frame.payload)
        : textual || frame.opcode === 'ping' || frame.opcode === 'pong'
          ? wholeUtf8(frame.payload)
          : null;
    const body = content === null && frame.payload.length > 0 ? frame.payload : null;
    this.emit({
      at: new Date(),
      direction,
      opcode: frame.opcode,
      fin: frame.fin,
      size: frame.size,
      content,
      body,
      storedBytes: frame.payload.length,
      truncated: frame.truncated,
    });
  }
}
