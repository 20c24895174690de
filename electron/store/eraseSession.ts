import type Database from 'better-sqlite3';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionId } from '../contract/ids.ts';
import { sessionPaths, type CapsemHome } from './paths.ts';
import { getSession } from './registry.ts';

export class SessionRunningError extends Error {
  override name = 'SessionRunningError';
}

function folderBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += folderBytes(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

export interface Erased {
  /** 1 when its session.db was on disk and is now gone. */
  readonly resident: number;
  /** 1 when it was no longer resident (vacuumed, or its folder already gone) and is now erased. */
  readonly archived: number;
  readonly bytes: number;
}

/**
 * Erases a session's recorded content: its folder (session.db, logs, workspace). main.db keeps its
 * figures, the cost ledger, with status `erased`; the name is given up. A running session is refused.
 */
export function eraseSession(home: CapsemHome, mainDb: Database.Database, id: SessionId): Erased {
  const record = getSession(mainDb, id);
  if (record?.status === 'running') throw new SessionRunningError(`session ${id} is running; stop it before erasing it`);
  const { dir, dbPath } = sessionPaths(home, id);
  const resident = existsSync(dbPath);
  const onDisk = existsSync(dir);
  const bytes = onDisk ? folderBytes(dir) : 0;
  if (onDisk) rmSync(dir, { recursive: true, force: true });
  if (record) {
    mainDb.prepare("UPDATE sessions SET status = 'erased', resumable = 0, updated_at = ? WHERE id = ?").run(new Date().toISOString(), id);
  }
  return { resident: resident ? 1 : 0, archived: !resident && record && record.status !== 'erased' ? 1 : 0, bytes };
}
