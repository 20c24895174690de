import type { SessionId } from '../../electron/contract/ids.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { ensurePrivateDir, sessionPaths, type CapsemHome } from '../../electron/store/paths.ts';
import { registerSession } from '../../electron/store/registry.ts';
import { rollUpSession } from '../../electron/store/rollup.ts';
import { SessionWriter } from '../../electron/store/sessionWriter.ts';

/** A registered, running session with an open writer, for tests that need to control its rows. */
export async function liveSession(
  home: CapsemHome,
  name: string | null = null,
): Promise<{ id: SessionId; writer: SessionWriter; end: () => Promise<void> }> {
  const db = openMainDb(home);
  const record = registerSession(db, { name, mode: 'test' });
  db.close();
  const paths = sessionPaths(home, record.id);
  ensurePrivateDir(paths.dir);
  const writer = await SessionWriter.open(paths.dbPath, { session_id: record.id });
  return {
    id: record.id,
    writer,
    end: async () => {
      await writer.close();
      const main = openMainDb(home);
      rollUpSession(home, main, record.id, { status: 'stopped' });
      main.close();
    },
  };
}

export const now = (): string => new Date().toISOString();

/**
 * An ended session of `rows` plain HTTP exchanges, written as the proxy would (one writer,
 * batched): a GET to one of 50 hosts each, one in 97 denied, a millisecond apart from 2025-01-01.
 * `extra` adds columns to every row.
 */
export async function bigSession(home: CapsemHome, name: string, rows: number, extra: Record<string, unknown> = {}): Promise<SessionId> {
  const session = await liveSession(home, name);
  const start = Date.parse('2025-01-01T00:00:00Z');
  for (let i = 0; i < rows; i++) {
    session.writer.append('net_events', {
      timestamp: new Date(start + i).toISOString(),
      domain: `host-${i % 50}.example`,
      decision: i % 97 === 0 ? 'denied' : 'allowed',
      method: 'GET',
      path: `/item/${i}`,
      status_code: 200,
      bytes_sent: 10,
      bytes_received: 100,
      duration_ms: 3,
      process_name: 'curl',
      ...extra,
    });
    if (session.writer.needsDrain) await session.writer.drained();
  }
  await session.end();
  return session.id;
}
