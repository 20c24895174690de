import { closeSync, createReadStream, existsSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

// The terminal as it was seen, kept for replay in the session folder: asciicast v2 (one JSON
// header line, then [seconds, code, data] lines), which xterm.js-based players and asciinema read.
// Output and resizes are recorded; keystrokes are not, since a typed password would land on disk.
// A resumed or reattached session appends to the same file, timed from its first header.

export interface TranscriptHeader {
  readonly version: 2;
  readonly width: number;
  readonly height: number;
  readonly timestamp: number;
  readonly env?: Readonly<Record<string, string>>;
}

export type TranscriptEvent = readonly [seconds: number, code: 'o' | 'r', data: string];

export class PtyTranscript {
  private readonly fd: number;
  private readonly startedMs: number;
  private readonly decoder = new StringDecoder('utf8');

  constructor(path: string, size: { cols: number; rows: number }, term: string) {
    const existing = existsSync(path) && statSync(path).size > 0 ? readHeader(path) : null;
    this.fd = openSync(path, 'a', 0o600);
    if (existing) this.startedMs = existing.timestamp * 1000;
    else {
      this.startedMs = Date.now();
      const header: TranscriptHeader = {
        version: 2,
        width: size.cols,
        height: size.rows,
        timestamp: Math.floor(this.startedMs / 1000),
        env: { TERM: term },
      };
      writeSync(this.fd, `${JSON.stringify(header)}\n`);
    }
  }

  output(chunk: Buffer): void {
    const text = this.decoder.write(chunk);
    if (text !== '') this.event('o', text);
  }

  resize(cols: number, rows: number): void {
    this.event('r', `${cols}x${rows}`);
  }

  close(): void {
    const rest = this.decoder.end();
    if (rest !== '') this.event('o', rest);
    closeSync(this.fd);
  }

  private event(code: 'o' | 'r', data: string): void {
    const seconds = Math.max(0, (Date.now() - this.startedMs) / 1000);
    writeSync(this.fd, `${JSON.stringify([Number(seconds.toFixed(6)), code, data])}\n`);
  }
}

/** The header is one short JSON line; a file whose first line is longer has none we can read. */
const HEADER_MAX_BYTES = 64 << 10;

function parseHeader(line: string): TranscriptHeader | null {
  try {
    const header = JSON.parse(line) as Partial<TranscriptHeader>;
    const isSize = (n: unknown): boolean => Number.isInteger(n) && (n as number) > 0;
    return header.version === 2 && typeof header.timestamp === 'number' && isSize(header.width) && isSize(header.height)
      ? (header as TranscriptHeader)
      : null;
  } catch {
    return null;
  }
}

function readHeader(path: string): TranscriptHeader | null {
  const fd = openSync(path, 'r');
  try {
    const head = Buffer.alloc(HEADER_MAX_BYTES);
    const n = readSync(fd, head, 0, head.length, 0);
    const end = head.subarray(0, n).indexOf(0x0a);
    return end === -1 ? null : parseHeader(head.subarray(0, end).toString('utf8'));
  } finally {
    closeSync(fd);
  }
}

function parseEvent(line: string): TranscriptEvent | null {
  try {
    const value = JSON.parse(line) as unknown;
    return Array.isArray(value) && typeof value[0] === 'number' && (value[1] === 'o' || value[1] === 'r') && typeof value[2] === 'string'
      ? [value[0], value[1], value[2]]
      : null;
  } catch {
    return null;
  }
}

/** About this much of the file per chunk of a replay: whole lines, so a chunk may run one line over. */
export const REPLAY_CHUNK_BYTES = 512 << 10;
/** Our writer's lines are one pty read each, far below this; a longer line is skipped, never held whole. */
export const TRANSCRIPT_MAX_LINE_BYTES = 4 << 20;

export interface TranscriptChunk {
  /** Read from the first line when the chunk starts at 0; null elsewhere, or when it does not parse. */
  readonly header: TranscriptHeader | null;
  readonly events: TranscriptEvent[];
  /** The byte offset the next chunk starts at, or null when this chunk reached the end of the file. */
  readonly next: number | null;
}

/**
 * A stretch of a transcript for replay: the whole lines from byte `from` until about `maxBytes`
 * have been read, streamed from the file, so a replay holds one chunk in memory at a time however
 * large the file (an imported one is anyone's). Lines that do not parse (a write cut by a crash,
 * a chunk asked for from the middle of a line) are skipped.
 */
export async function readTranscriptChunk(path: string, from = 0, maxBytes = REPLAY_CHUNK_BYTES): Promise<TranscriptChunk> {
  if (!existsSync(path)) return { header: null, events: [], next: null };
  const stream = createReadStream(path, { start: from, highWaterMark: 64 << 10 });
  let header: TranscriptHeader | null = null;
  const events: TranscriptEvent[] = [];
  let atHeader = from === 0;
  let read = 0;
  let line: Buffer[] = [];
  let lineBytes = 0;
  const take = (piece: Buffer): void => {
    lineBytes += piece.length;
    if (lineBytes > TRANSCRIPT_MAX_LINE_BYTES) line = [];
    else if (piece.length > 0) line.push(piece);
  };
  const finishLine = (): void => {
    const text = lineBytes > TRANSCRIPT_MAX_LINE_BYTES ? null : Buffer.concat(line).toString('utf8');
    read += lineBytes;
    line = [];
    lineBytes = 0;
    if (atHeader) {
      atHeader = false;
      header = text === null ? null : parseHeader(text);
      return;
    }
    const event = text === null || text === '' ? null : parseEvent(text);
    if (event) events.push(event);
  };
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let start = 0;
      for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
        take(chunk.subarray(start, end));
        finishLine();
        read += 1;
        start = end + 1;
        if (read >= maxBytes) return { header, events, next: from + read };
      }
      take(chunk.subarray(start));
    }
  } finally {
    stream.destroy();
  }
  // The last line has no newline: a write cut short, or one a live writer has not finished yet.
  if (lineBytes > 0) finishLine();
  return { header, events, next: null };
}
