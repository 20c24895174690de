import type { Socket } from 'node:net';
import { nestsDeeperThan } from './jsonNesting.ts';

// Newline-delimited JSON over a socket, with a cap on line length that holds while a line is
// still arriving: a peer cannot make us buffer more than `maxLine` bytes by never sending '\n'.
// A line nested deeper than `maxDepth` is refused before it is parsed, so nothing that reads the
// value afterwards can be made to recurse off the end of the stack.

export interface JsonLinesLimits {
  readonly maxLine: number;
  readonly maxDepth: number;
}

export interface JsonLinesHandlers {
  /** A parsed line; still to be validated. */
  readonly onMessage: (value: unknown) => void;
  /** A line that is not JSON or nests too deep; the reason says which. */
  readonly onBadLine: (reason: string) => void;
  /** A line longer than the cap; the caller decides whether to drop the peer (no further lines are read). */
  readonly onOverflow: () => void;
}

export interface JsonLines {
  send(message: unknown): void;
}

export function jsonLines(socket: Socket, { maxLine, maxDepth }: JsonLinesLimits, handlers: JsonLinesHandlers): JsonLines {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let overflowed = false;
  const line = (bytes: Buffer): void => {
    if (nestsDeeperThan(bytes, maxDepth)) return handlers.onBadLine(`nested deeper than ${maxDepth} levels`);
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      handlers.onBadLine(`not JSON: ${(err as Error).message}`);
      return;
    }
    handlers.onMessage(value);
  };
  socket.on('data', (chunk: Buffer) => {
    let start = 0;
    while (!overflowed && start < chunk.length) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl < 0 ? chunk.length : nl;
      if (pendingBytes + (end - start) > maxLine) {
        overflowed = true;
        pending = [];
        handlers.onOverflow();
        return;
      }
      if (nl < 0) {
        pending.push(chunk.subarray(start));
        pendingBytes += chunk.length - start;
        return;
      }
      const whole = pending.length === 0 ? chunk.subarray(start, nl) : Buffer.concat([...pending, chunk.subarray(start, nl)]);
      pending = [];
      pendingBytes = 0;
      start = nl + 1;
      if (whole.length > 0) line(whole);
    }
  });
  return {
    send(message) {
      if (socket.writable) socket.write(`${JSON.stringify(message)}\n`);
    },
  };
}
