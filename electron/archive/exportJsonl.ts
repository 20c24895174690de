import type { SessionEventStore } from '../sessions/sessionEventStore.ts';
import type { ChunkSink } from './chunkSink.ts';

// JSONL: one session-api event per line, in seq order, as GET /v1/events gives them (full view).
// Events are read a slice at a time and each is built on its own, so memory follows one slice.

const SLICE = 500;

export async function writeJsonl(
  store: SessionEventStore,
  sink: ChunkSink,
  onProgress?: (done: number, total: number) => void,
): Promise<number> {
  const total = store.bounds().total;
  let after = 0;
  let count = 0;
  for (;;) {
    const refs = store.after(after, SLICE);
    if (refs.length === 0) break;
    const rows = store.rows(refs);
    let chunk = '';
    for (const ref of refs) {
      chunk += `${JSON.stringify(store.event(ref, { full: true }, rows.get(ref.rowSeq)))}\n`;
      after = ref.seq;
    }
    count += refs.length;
    await sink.write(chunk);
    onProgress?.(count, total);
  }
  return count;
}
