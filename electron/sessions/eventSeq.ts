// An exchange is one row in session.db and two events on the wire (its request, then its response
// or denial), so wire seqs are row seqs doubled: row s owns 2s-1 for a request and 2s for the rest.
// A cursor then names its row with no lookup table, numbering stays stable as rows arrive (a row
// written later never shifts an earlier event's seq), and a row with one event leaves a gap, which
// the spec allows.

export type EventPhaseSlot = 'request' | 'final';

export const requestSeqOf = (rowSeq: number): number => 2 * rowSeq - 1;
export const finalSeqOf = (rowSeq: number): number => 2 * rowSeq;
export const wireSeqOf = (rowSeq: number, slot: EventPhaseSlot): number => (slot === 'request' ? requestSeqOf(rowSeq) : finalSeqOf(rowSeq));

/** The row a wire seq belongs to, and which of its events it names. */
export function rowSlotOf(wireSeq: number): { rowSeq: number; slot: EventPhaseSlot } {
  return { rowSeq: Math.ceil(wireSeq / 2), slot: wireSeq % 2 === 1 ? 'request' : 'final' };
}
