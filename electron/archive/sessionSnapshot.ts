import Database from 'better-sqlite3';
import { createReadStream, createWriteStream, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import type { SessionId } from '../contract/ids.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { SessionDbMissingError } from '../store/sessionDb.ts';
import type { StagingDir } from './stagingDir.ts';
import { vacuumedFiles } from '../store/vacuumedFiles.ts';

// A consistent copy of a session's files to export from, live or vacuumed. The database comes
// through SQLite's online backup API, so a writer may keep committing while it runs: the copy is
// one transaction's view. Logs are append-only, so each is fixed at its current length and read
// no further; nothing has to copy them.

export interface SnapshotFile {
  readonly path: string;
  /** Bytes to read from `path`; a live log may grow past it while the export runs. */
  readonly bytes: number;
}

export interface SessionSnapshot {
  readonly db: SnapshotFile;
  readonly logs: ReadonlyArray<SnapshotFile & { readonly name: 'pty.log' | 'serial.log' }>;
  readonly vacuumed: boolean;
  /** The workspace contents the session names, packed from the home's store (contentsPack.ts); absent when it keeps none. */
  readonly contents?: SnapshotFile;
}

export type StepProgress = (done: number, total: number) => void;

/** Pages copied per backup step (16 MiB at our page size): small enough to report progress. */
const BACKUP_STEP_PAGES = 1024;

/**
 * Copies a live database with the backup API. A backup through another connection restarts when
 * a writer commits between steps; should that happen, the rest is copied in one step, which holds
 * a read transaction across the whole copy (readers never block the WAL writer).
 */
export async function backupDb(source: string, destination: string, onProgress?: StepProgress): Promise<void> {
  const db = new Database(source, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    let lastRemaining = Infinity;
    let oneStep = false;
    await db.backup(destination, {
      progress: ({ totalPages, remainingPages }) => {
        if (remainingPages > lastRemaining) oneStep = true;
        lastRemaining = remainingPages;
        onProgress?.(totalPages - remainingPages, totalPages);
        return oneStep ? Math.max(totalPages, 1) : BACKUP_STEP_PAGES;
      },
    });
  } finally {
    db.close();
  }
}

async function gunzipTo(source: string, destination: string, onProgress?: StepProgress): Promise<number> {
  const total = statSync(source).size;
  let read = 0;
  const input = createReadStream(source);
  input.on('data', (chunk) => {
    read += chunk.length;
    onProgress?.(read, total);
  });
  await pipeline(input, createGunzip(), createWriteStream(destination, { mode: 0o600 }));
  return statSync(destination).size;
}

export async function snapshotSession(
  home: CapsemHome,
  id: SessionId,
  staging: StagingDir,
  onProgress?: StepProgress,
): Promise<SessionSnapshot> {
  const paths = sessionPaths(home, id);
  const packed = vacuumedFiles(paths);
  const dbCopy = join(staging.path, 'session.db');
  const logs: (SnapshotFile & { name: 'pty.log' | 'serial.log' })[] = [];
  if (existsSync(paths.dbPath)) {
    await backupDb(paths.dbPath, dbCopy, onProgress);
    for (const [name, path] of [
      ['pty.log', paths.ptyLogPath],
      ['serial.log', paths.serialLogPath],
    ] as const) {
      if (existsSync(path)) logs.push({ name, path, bytes: statSync(path).size });
    }
    return { db: { path: dbCopy, bytes: statSync(dbCopy).size }, logs, vacuumed: false };
  }
  if (!existsSync(packed.dbGz)) throw new SessionDbMissingError(`session ${id} has no session.db on disk (erased or never recorded)`);
  const bytes = await gunzipTo(packed.dbGz, dbCopy, onProgress);
  for (const [name, path] of [
    ['pty.log', packed.ptyLogGz],
    ['serial.log', packed.serialLogGz],
  ] as const) {
    if (!existsSync(path)) continue;
    const copy = join(staging.path, name);
    logs.push({ name, path: copy, bytes: await gunzipTo(path, copy) });
  }
  return { db: { path: dbCopy, bytes }, logs, vacuumed: true };
}
