import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionId } from '../contract/ids.ts';
import { ensurePrivateDir, type CapsemHome } from '../store/paths.ts';
import type { OpenSession } from './sessionStores.ts';

// sessions.export as JSONL: one session-api event per line, in seq order, as GET /v1/events gives
// them (full view), to CAPSEM_HOME/exports/. The file is private (0600) like everything recorded.

const SLICE = 500;

export function exportJsonl(home: CapsemHome, id: SessionId, session: OpenSession, now = new Date()): { path: string; bytes: number } {
  const dir = join(home.root, 'exports');
  ensurePrivateDir(dir);
  const path = join(dir, `${id}-${now.toISOString().replace(/[:.]/g, '-')}.jsonl`);
  const fd = openSync(path, 'wx', 0o600);
  let bytes = 0;
  try {
    const { store } = session;
    let after = 0;
    for (;;) {
      const refs = store.after(after, SLICE);
      if (refs.length === 0) break;
      const rows = store.rows(refs);
      let chunk = '';
      for (const ref of refs) {
        chunk += `${JSON.stringify(store.event(ref, { full: true }, rows.get(ref.seq)))}\n`;
        after = ref.seq;
      }
      bytes += writeSync(fd, chunk);
    }
  } finally {
    closeSync(fd);
  }
  return { path, bytes };
}
