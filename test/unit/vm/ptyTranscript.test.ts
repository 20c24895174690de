import { appendFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTranscriptChunk, TRANSCRIPT_MAX_LINE_BYTES, type TranscriptEvent } from '../../../electron/vm/ptyTranscript.ts';

const folder = mkdtempSync(join(tmpdir(), 'capsem-transcript-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const HEADER = `${JSON.stringify({ version: 2, width: 100, height: 30, timestamp: 1_700_000_000 })}\n`;
const line = (event: TranscriptEvent): string => `${JSON.stringify(event)}\n`;

describe('reading a transcript in chunks', () => {
  it('gives whole lines of about the asked size, each chunk starting where the last ended, the header only first', async () => {
    const path = join(folder, 'plain.log');
    const events: TranscriptEvent[] = Array.from({ length: 500 }, (_, i) => [
      i / 10,
      i % 50 === 49 ? 'r' : 'o',
      i % 50 === 49 ? '120x40' : `line ${i} ${'·'.repeat(i % 97)}\r\n`,
    ]);
    writeFileSync(path, HEADER + events.map(line).join(''));
    const size = statSync(path).size;
    const seen: TranscriptEvent[] = [];
    let from: number | null = 0;
    let chunks = 0;
    while (from !== null) {
      const chunk = await readTranscriptChunk(path, from, 2000);
      expect(chunk.header).toEqual(from === 0 ? { version: 2, width: 100, height: 30, timestamp: 1_700_000_000 } : null);
      if (chunk.next !== null) {
        expect(chunk.next - from).toBeGreaterThanOrEqual(2000);
        expect(chunk.next - from).toBeLessThan(2000 + 400);
      }
      seen.push(...chunk.events);
      from = chunk.next;
      chunks += 1;
    }
    expect(seen).toEqual(events);
    expect(chunks).toBeGreaterThan(size / 2400);
  });

  it('skips a line too long to hold, lines that do not parse, and reads a last line without its newline', async () => {
    const path = join(folder, 'hostile.log');
    writeFileSync(path, HEADER + line([0.1, 'o', 'before']));
    // One line past the limit, written in pieces so the test itself never holds it whole.
    appendFileSync(path, '[0.2,"o","');
    for (let written = 0; written <= TRANSCRIPT_MAX_LINE_BYTES; written += 1 << 20) appendFileSync(path, 'x'.repeat(1 << 20));
    appendFileSync(path, '"]\n');
    appendFileSync(path, `not json\n[1,"x","bad code"]\n\n${line([0.3, 'o', 'after']).trimEnd()}`);
    const chunk = await readTranscriptChunk(path, 0, Infinity);
    expect(chunk.events).toEqual([
      [0.1, 'o', 'before'],
      [0.3, 'o', 'after'],
    ]);
    expect(chunk.next).toBeNull();
  });

  it('gives nothing past the end, nor for a file that is not there', async () => {
    const path = join(folder, 'short.log');
    writeFileSync(path, HEADER + line([0, 'o', 'x']));
    expect(await readTranscriptChunk(path, statSync(path).size + 10)).toEqual({ header: null, events: [], next: null });
    expect(await readTranscriptChunk(join(folder, 'missing.log'))).toEqual({ header: null, events: [], next: null });
  });
});
