import type Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import type { SessionId } from '../contract/ids.ts';
import { openMainDb } from '../store/mainDb.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { allSessions, getSession, type SessionRecord } from '../store/registry.ts';
import { resolveSession } from '../store/resolver.ts';

/**
 * The session a command names (id or display name, through the resolver), or, with none named,
 * the newest session whose session.db is still on disk.
 */
export function targetSession(
  home: CapsemHome,
  mainDb: Database.Database,
  input: string | undefined,
): { id: SessionId; record: SessionRecord | null; dbPath: string } {
  if (input !== undefined) {
    const id = resolveSession(home, mainDb, input);
    return { id, record: getSession(mainDb, id), dbPath: sessionPaths(home, id).dbPath };
  }
  for (const record of allSessions(mainDb)) {
    const { dbPath } = sessionPaths(home, record.id);
    if (existsSync(dbPath)) return { id: record.id, record, dbPath };
  }
  throw new Error('no session with a session.db on disk; run a session first, or `capsem dev seed` for sample data');
}

/** targetSession with its own short-lived main.db connection: for commands that only need the id. */
export function resolveTarget(home: CapsemHome, input: string): { id: SessionId; record: SessionRecord | null } {
  const db = openMainDb(home);
  try {
    const { id, record } = targetSession(home, db, input);
    return { id, record };
  } finally {
    db.close();
  }
}
