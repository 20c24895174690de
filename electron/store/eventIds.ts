import { randomInt } from 'node:crypto';

// event_id is 12 lowercase hex characters (48 bits). Within one session.db they are minted in
// ascending order from a random start: the event_id indexes then grow at their right edge, which
// keeps the writer about a third faster than random ids, and ids stay unique within the session.

const SPACE = 2 ** 48;
const HEADROOM = 2 ** 40;

/** Below 2**24, so each half is a small integer: a 48-bit double printed in hex takes V8's slow path, a floating-point division a digit. */
const HALF = 2 ** 24;

export function formatEventId(value: number): string {
  const high = Math.floor(value / HALF);
  return high.toString(16).padStart(6, '0') + (value - high * HALF).toString(16).padStart(6, '0');
}

/** Where a writer continues: just past the highest id already in the file, or a random start. */
export function firstEventId(maxExisting: string | null): number {
  if (maxExisting !== null && /^[0-9a-f]{12}$/.test(maxExisting)) {
    const next = parseInt(maxExisting, 16) + 1;
    if (next < SPACE - HEADROOM) return next;
  }
  return randomInt(0, 2 ** 47);
}

export class EventIdMinter {
  constructor(private next: number) {}

  mint(): string {
    return formatEventId(this.next++);
  }
}
