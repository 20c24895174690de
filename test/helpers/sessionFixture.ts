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
