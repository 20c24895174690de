import { closeSync, existsSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
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
      const header: TranscriptHeader = { version: 2, width: size.cols, height: size.rows, timestamp: Math.floor(this.startedMs / 1000), env: { TERM: term } };
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

function readHeader(path: string): TranscriptHeader | null {
  const first = readFileSync(path, 'utf8').split('\n', 1)[0] ?? '';
  try {
    const header = JSON.parse(first) as Partial<TranscriptHeader>;
    return header.version === 2 && typeof header.timestamp === 'number' ? (header as TranscriptHeader) : null;
  } catch {
    return null;
  }
}

/** A transcript for replay; lines that do not parse (a write cut by a crash) are skipped. */
export function readTranscript(path: string): { header: TranscriptHeader | null; events: TranscriptEvent[] } {
  if (!existsSync(path)) return { header: null, events: [] };
  const lines = readFileSync(path, 'utf8').split('\n');
  const header = readHeader(path);
  const events: TranscriptEvent[] = [];
  for (const line of lines.slice(1)) {
    if (line === '') continue;
    try {
      const value = JSON.parse(line) as unknown;
      if (Array.isArray(value) && typeof value[0] === 'number' && (value[1] === 'o' || value[1] === 'r') && typeof value[2] === 'string') events.push([value[0], value[1], value[2]]);
    } catch {
      continue;
    }
  }
  return { header, events };
}
