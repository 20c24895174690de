// Server-sent events, decoded incrementally: chunks in (split anywhere, even inside a UTF-8
// character or a CRLF), events out. Pure, so tests feed it recorded chunk sequences.

export interface SseEvent {
  readonly event: string;
  readonly data: string;
}

export class SseDecoder {
  private readonly text = new TextDecoder('utf-8');
  private buffer = '';
  private eventName = '';
  private data: string[] = [];
  private pendingCr = false;

  /** Feeds a chunk; returns the events it completed. */
  push(chunk: Uint8Array): SseEvent[] {
    return this.lines(this.text.decode(chunk, { stream: true }));
  }

  /** Ends the stream: an event left without its blank line is not dispatched (it was cut). */
  end(): SseEvent[] {
    return this.lines(this.text.decode());
  }

  private lines(text: string): SseEvent[] {
    const out: SseEvent[] = [];
    let input = text;
    if (this.pendingCr && input.startsWith('\n')) input = input.slice(1);
    this.pendingCr = false;
    this.buffer += input;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (!m) break;
      // A lone CR at the end may be the first half of a CRLF split across chunks.
      if (m[0] === '\r' && m.index === this.buffer.length - 1) {
        this.pendingCr = true;
      }
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line, out);
    }
    return out;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === '') {
      if (this.data.length > 0) out.push({ event: this.eventName || 'message', data: this.data.join('\n') });
      this.eventName = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.eventName = value;
    else if (field === 'data') this.data.push(value);
  }
}

export function parseSse(body: Uint8Array): { events: SseEvent[]; complete: boolean } {
  const decoder = new SseDecoder();
  const events = decoder.push(body);
  const text = Buffer.from(body).toString('utf8');
  events.push(...decoder.end());
  return { events, complete: /(\r\n|\r|\n)(\r\n|\r|\n)\s*$/.test(text) || text.length === 0 };
}
