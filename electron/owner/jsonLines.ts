import type { Socket } from 'node:net';
import { nestsDeeperThan } from './jsonNesting.ts';

// Newline-delimited JSON over a socket, with a cap on line length that holds while a line is
// still arriving: a peer cannot make us buffer more than `maxLine` bytes by never sending '\n'.
// A line nested deeper than `maxDepth` is refused before it is parsed, so nothing that reads the
// value afterwards can be made to recurse off the end of the stack.
// Both directions are paced: a peer that stops reading makes `send` say so (the producer pauses
// until `whenDrained`), and a consumer that cannot take more holds the reading of further lines.

export interface JsonLinesLimits {
  readonly maxLine: number;
  readonly maxDepth: number;
}

/**
 * Unsent bytes past which the peer counts as behind. A few data messages (MAX_DATA_CHUNK, a
 * third larger as base64): enough to keep the socket busy, small next to what a flood would pile up.
 */
export const MAX_UNSENT_BYTES = 512 * 1024;

export interface JsonLinesHandlers {
  /** A parsed line; still to be validated. */
  readonly onMessage: (value: unknown) => void;
  /** A line that is not JSON or nests too deep; the reason says which. */
  readonly onBadLine: (reason: string) => void;
  /** A line longer than the cap; the caller decides whether to drop the peer (no further lines are read). */
  readonly onOverflow: () => void;
}

export interface JsonLines {
  /** Queues a message; false once the peer is more than MAX_UNSENT_BYTES behind (the message is queued all the same). */
  send(message: unknown): boolean;
  /** Calls `then` once the peer is no longer behind: at once when it is not; never if the socket closes first. */
  whenDrained(then: () => void): void;
  /**
   * Reads nothing more from the socket until `until` settles. The lines of a chunk already read
   * are still handled, so at most one socket read more arrives after the hold.
   */
  holdReading(until: Promise<unknown>): void;
  /** Reads on whatever is held: the connection is closing and only its end still matters. */
  releaseHolds(): void;
}

export function jsonLines(socket: Socket, { maxLine, maxDepth }: JsonLinesLimits, handlers: JsonLinesHandlers): JsonLines {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let overflowed = false;
  let holds = 0;
  let released = false;
  const drainWaiters: (() => void)[] = [];
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
  // The socket's own 'drain' comes when its buffer is empty, which it is not while the peer is
  // behind: one listener wakes every producer that waited.
  socket.on('drain', () => {
    for (const then of drainWaiters.splice(0)) then();
  });
  socket.on('close', () => void drainWaiters.splice(0));
  return {
    send(message) {
      if (socket.writable) socket.write(`${JSON.stringify(message)}\n`);
      return socket.writableLength <= MAX_UNSENT_BYTES;
    },
    whenDrained(then) {
      if (socket.writableLength <= MAX_UNSENT_BYTES) then();
      else if (!socket.destroyed) drainWaiters.push(then);
    },
    holdReading(until) {
      if (released) return;
      if (holds++ === 0) socket.pause();
      const release = (): void => {
        if (--holds === 0 && !released) socket.resume();
      };
      until.then(release, release);
    },
    releaseHolds() {
      released = true;
      socket.resume();
    },
  };
}
