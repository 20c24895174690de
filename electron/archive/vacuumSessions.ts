import Database from 'better-sqlite3';
import { createReadStream, createWriteStream, existsSync, fsyncSync, openSync, closeSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { SessionId } from '../contract/ids.ts';
import type { SessionStatus } from '../store/mainDb.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { releaseName } from '../store/registry.ts';
import { liveRollup, writeRollup } from '../store/rollup.ts';
import { makeStagingDir } from './stagingDir.ts';
import { sizeOf } from '../store/fileSizes.ts';
import { vacuumedFiles } from '../store/vacuumedFiles.ts';

// Retention: an ended session past its age is compacted. Its database is checkpointed, then
// VACUUM INTO writes a compact copy (free pages dropped, no WAL) which is gzip-compressed to
// session.db.gz; the logs are gzip-compressed too. VACUUM INTO rather than VACUUM in place: the
// original stays whole until the compressed copy is on disk under its final name, so a crash at
// any point loses nothing. main.db keeps the figures and records status `vacuumed`; export reads
// the compressed copy back. The workspace is left as it is: it is the user's files, not a record.

const ENDED: readonly SessionStatus[] = ['stopped', 'crashed', 'terminated'];

export interface VacuumOptions {
  readonly olderThanMs: number;
  readonly dryRun?: boolean;
  /** Also compact named sessions kept for resume; they give up their name and cannot be resumed. */
  readonly includeResumable?: boolean;
  readonly now?: Date;
  readonly onSession?: (outcome: VacuumOutcome) => void;
}

export interface VacuumOutcome {
  readonly id: SessionId;
  readonly name: string | null;
  readonly endedAt: string;
  readonly bytesBefore: number;
  /** null on a dry run. */
  readonly bytesAfter: number | null;
}

export interface VacuumReport {
  readonly vacuumed: readonly VacuumOutcome[];
  /** Resumable sessions past the age that were left alone (see includeResumable). */
  readonly skippedResumable: number;
}

interface Candidate {
  id: SessionId;
  name: string | null;
  status: Extract<SessionStatus, 'stopped' | 'crashed' | 'terminated'>;
  resumable: number;
  endedAt: string;
  rolled_up_at: string | null;
}

/** Parses `30d`, `12h`, `90m`, `45s` (a bare number is days). */
export function parseAge(text: string): number {
  const match = /^(\d+(?:\.\d+)?)([dhms]?)$/.exec(text.trim());
  if (!match) throw new Error(`"${text}" is not an age; write it as 30d, 12h, 90m or 45s`);
  const unit = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000, '': 86_400_000 }[match[2] as 'd' | 'h' | 'm' | 's' | ''];
  return Number(match[1]) * unit;
}

async function gzipFile(source: string, destination: string): Promise<number> {
  const partial = `${destination}.partial`;
  await pipeline(createReadStream(source), createGzip({ level: 6 }), createWriteStream(partial, { flags: 'w', mode: 0o600 }));
  const fd = openSync(partial, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(partial, destination);
  return statSync(destination).size;
}

/** The bytes the files hold; a missing one counts nothing. */
async function compactSession(home: CapsemHome, id: SessionId): Promise<{ before: number; after: number }> {
  const paths = sessionPaths(home, id);
  const packed = vacuumedFiles(paths);
  const dbFiles = [paths.dbPath, `${paths.dbPath}-wal`, `${paths.dbPath}-shm`];
  const before = sizeOf([...dbFiles, paths.ptyLogPath, paths.serialLogPath]);
  const staging = makeStagingDir(home, 'vacuum');
  try {
    const compact = join(staging.path, 'session.db');
    const db = new Database(paths.dbPath, { fileMustExist: true });
    try {
      db.pragma('busy_timeout = 5000');
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.prepare('VACUUM INTO ?').run(compact);
    } finally {
      db.close();
    }
    await gzipFile(compact, packed.dbGz);
    for (const [log, gz] of [
      [paths.ptyLogPath, packed.ptyLogGz],
      [paths.serialLogPath, packed.serialLogGz],
    ] as const) {
      if (existsSync(log)) await gzipFile(log, gz);
    }
    // Only now, with every compressed copy renamed into place, do the originals go.
    for (const file of [...dbFiles, paths.ptyLogPath, paths.serialLogPath]) rmSync(file, { force: true });
  } finally {
    staging.remove();
  }
  return { before, after: sizeOf([packed.dbGz, packed.ptyLogGz, packed.serialLogGz]) };
}

export async function vacuumSessions(home: CapsemHome, mainDb: Database.Database, options: VacuumOptions): Promise<VacuumReport> {
  const now = options.now ?? new Date();
  const cutoff = new Date(now.getTime() - options.olderThanMs).toISOString();
  const candidates = mainDb
    .prepare(
      `SELECT id, name, status, resumable, coalesce(stopped_at, updated_at, created_at) AS endedAt, rolled_up_at FROM sessions
       WHERE status IN (${ENDED.map((s) => `'${s}'`).join(', ')}) AND vacuumed_at IS NULL AND coalesce(stopped_at, updated_at, created_at) < ?
       ORDER BY endedAt`,
    )
    .all(cutoff) as Candidate[];
  const vacuumed: VacuumOutcome[] = [];
  let skippedResumable = 0;
  for (const c of candidates) {
    if (c.resumable === 1 && !options.includeResumable) {
      skippedResumable += 1;
      continue;
    }
    const paths = sessionPaths(home, c.id);
    if (!existsSync(paths.dbPath)) continue;
    const base = { id: c.id, name: c.name, endedAt: c.endedAt };
    if (options.dryRun) {
      const outcome = {
        ...base,
        bytesBefore: sizeOf([paths.dbPath, `${paths.dbPath}-wal`, paths.ptyLogPath, paths.serialLogPath]),
        bytesAfter: null,
      };
      vacuumed.push(outcome);
      options.onSession?.(outcome);
      continue;
    }
    // A session that ended without a rollup (a killed owner) gets its figures now, while its
    // database can still be read directly.
    if (c.rolled_up_at === null) writeRollup(mainDb, c.id, liveRollup(home, c.id), { status: c.status });
    if (c.resumable === 1) releaseName(mainDb, c.id);
    const { before, after } = await compactSession(home, c.id);
    const at = new Date().toISOString();
    mainDb
      .prepare(
        "UPDATE sessions SET status = 'vacuumed', vacuumed_at = ?, compressed_size_bytes = ?, resumable = 0, updated_at = ? WHERE id = ?",
      )
      .run(at, after, at, c.id);
    const outcome = { ...base, bytesBefore: before, bytesAfter: after };
    vacuumed.push(outcome);
    options.onSession?.(outcome);
  }
  return { vacuumed, skippedResumable };
}
