import Database from 'better-sqlite3';
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { asDisplayName, isSessionId, newSessionId, type DisplayName, type SessionId } from '../contract/ids.ts';
import { assertNotNewer } from '../store/migrate.ts';
import { makePrivateFiles, sessionPaths, type CapsemHome } from '../store/paths.ts';
import { computeRollup, existingTables, writeRollup } from '../store/rollup.ts';
import { SESSION_DB_MIGRATIONS } from '../store/sessionDb.ts';
import { adoptSessionDb, needsAdoption, SPEC_REQUIRED_TABLES } from './adoptSessionDb.ts';
import { ArchiveRejectedError, DEFAULT_IMPORT_LIMITS, type ImportLimits, type Manifest } from './archiveFormat.ts';
import { extractArchive, sniffFile } from './archiveReader.ts';
import { backupDb } from './sessionSnapshot.ts';
import { makeStagingDir } from './stagingDir.ts';

// `capsem import`: an archive or a bare session.db becomes a new, read-only session. Everything is
// staged in a private folder under CAPSEM_HOME/run and verified there; only then is the folder
// renamed into run/sessions/<id> (one rename, same filesystem) and the session registered in
// main.db. A refusal leaves CAPSEM_HOME as it was. Nothing is overwritten: an id already known
// gets a new one, a name already used gets a suffix (co-work1-2).

export interface ImportOptions {
  readonly limits?: Partial<ImportLimits>;
  readonly onProgress?: (stage: string, done: number, total: number) => void;
  readonly now?: Date;
}

export interface ImportResult {
  readonly id: SessionId;
  readonly name: DisplayName | null;
  readonly source: 'archive' | 'session.db';
  /** The id and name the file carried, when they had to change. */
  readonly originalId: string | null;
  readonly originalName: string | null;
  /** The file came from another tool and was given this app's columns. */
  readonly adopted: boolean;
}

/** Opens a staged database and refuses one that is damaged, newer than us, or not a session.db. */
function validateStagedDb(path: string, ours: boolean): void {
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    db.prepare('SELECT count(*) FROM sqlite_master').get();
  } catch (err) {
    throw new ArchiveRejectedError(`session.db is not a readable SQLite database: ${(err as Error).message}`);
  }
  try {
    // quick_check reads every page (O(N)) without cross-checking indexes: integrity_check's extra
    // cost buys nothing here, since the members' checksums already pin the bytes the exporter wrote.
    const problems = (db.prepare('SELECT quick_check AS s FROM pragma_quick_check LIMIT 3').all() as { s: string }[]).map((r) => r.s);
    if (problems.length !== 1 || problems[0] !== 'ok') throw new ArchiveRejectedError(`session.db is damaged: ${problems.join('; ')}`);
    if (ours) {
      try {
        assertNotNewer(db, 'the imported session.db', SESSION_DB_MIGRATIONS);
      } catch (err) {
        throw new ArchiveRejectedError((err as Error).message);
      }
    }
    const tables = existingTables(db);
    const missing = SPEC_REQUIRED_TABLES.filter((t) => !tables.has(t));
    if (missing.length > 0) throw new ArchiveRejectedError(`not a session database: it lacks the table${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
  } finally {
    db.close();
  }
}

function metaOf(db: Database.Database): Map<string, string> {
  if (!existingTables(db).has('session_meta')) return new Map();
  return new Map((db.prepare('SELECT key, value FROM session_meta').all() as { key: string; value: string | null }[]).map((r) => [r.key, r.value ?? '']));
}

function freeName(mainDb: Database.Database, wanted: string | null): DisplayName | null {
  if (!wanted) return null;
  let base: DisplayName;
  try {
    base = asDisplayName(wanted);
  } catch {
    return null;
  }
  const taken = (name: string): boolean => mainDb.prepare('SELECT 1 FROM sessions WHERE name = ?').get(name) !== undefined;
  if (!taken(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `-${n}`;
    const candidate = asDisplayName(`${base.slice(0, 64 - suffix.length)}${suffix}`);
    if (!taken(candidate)) return candidate;
  }
}

function freeId(home: CapsemHome, mainDb: Database.Database, wanted: string | null): SessionId {
  const known = (id: string): boolean => mainDb.prepare('SELECT 1 FROM sessions WHERE id = ?').get(id) !== undefined || existsSync(sessionPaths(home, id as SessionId).dir);
  if (wanted && isSessionId(wanted) && !known(wanted)) return wanted;
  for (;;) {
    const id = newSessionId();
    if (!known(id)) return id;
  }
}

export async function importSession(home: CapsemHome, mainDb: Database.Database, file: string, options: ImportOptions = {}): Promise<ImportResult> {
  const limits: ImportLimits = { ...DEFAULT_IMPORT_LIMITS, ...options.limits };
  if (!existsSync(file)) throw new Error(`no file at ${file}`);
  if (!statSync(file).isFile()) throw new ArchiveRejectedError(`${file} is not a regular file`);
  const kind = sniffFile(file);
  if (kind === 'unknown') throw new ArchiveRejectedError(`${file} is neither a Capsem session archive nor a session.db`);
  const staging = makeStagingDir(home, 'import');
  try {
    const folder = join(staging.path, 'session');
    mkdirSync(folder, { mode: 0o700 });
    const dbPath = join(folder, 'session.db');
    let manifest: Manifest | null = null;
    if (kind === 'sqlite') {
      const size = statSync(file).size;
      if (size > limits.maxMemberBytes) throw new ArchiveRejectedError(`${basename(file)} is ${size} bytes, over the import limit of ${limits.maxMemberBytes}`);
      try {
        // The backup API, not a file copy: a database with a -wal beside it is read whole.
        await backupDb(file, dbPath, (done, total) => options.onProgress?.('copy', done, total));
      } catch (err) {
        throw new ArchiveRejectedError(`${basename(file)} is not a readable SQLite database: ${(err as Error).message}`);
      }
    } else {
      manifest = await extractArchive(file, folder, limits, (done, total) => options.onProgress?.('verify', done, total));
    }

    const probe = new Database(dbPath, { readonly: true, fileMustExist: true });
    const ours = manifest !== null || existingTables(probe).has('session_meta');
    probe.close();
    validateStagedDb(dbPath, ours);

    const db = new Database(dbPath);
    let result: ImportResult;
    let rollup: ReturnType<typeof computeRollup>;
    let createdAt: string;
    let stoppedAt: string | null;
    try {
      const adopted = needsAdoption(db);
      if (adopted) adoptSessionDb(db);
      const meta = metaOf(db);
      const carriedId = manifest?.sessionId ?? meta.get('session_id') ?? null;
      const carriedName = manifest ? manifest.name : (meta.get('name') || null);
      const id = freeId(home, mainDb, carriedId);
      const name = freeName(mainDb, carriedName);
      rollup = computeRollup(db);
      const now = (options.now ?? new Date()).toISOString();
      createdAt = manifest?.createdAt ?? meta.get('created_at') ?? rollup.activity.lastEventAt ?? now;
      stoppedAt = manifest?.stoppedAt ?? rollup.activity.lastEventAt;
      const upsert = db.prepare('INSERT INTO session_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
      db.transaction(() => {
        upsert.run('session_id', id);
        upsert.run('name', name ?? '');
        upsert.run('imported_at', now);
        upsert.run('imported_from', carriedId ?? basename(file));
      })();
      result = {
        id, name, source: manifest ? 'archive' : 'session.db', adopted,
        originalId: carriedId !== null && carriedId !== id ? carriedId : null,
        originalName: carriedName !== null && carriedName !== name ? carriedName : null,
      };
    } finally {
      db.close();
    }
    makePrivateFiles(dbPath);

    const target = sessionPaths(home, result.id).dir;
    renameSync(folder, target);
    try {
      mainDb.transaction(() => {
        mainDb
          .prepare(`INSERT INTO sessions (id, name, resumable, mode, command, status, created_at, updated_at) VALUES (?, ?, 0, 'imported', NULL, 'stopped', ?, ?)`)
          .run(result.id, result.name, createdAt, createdAt);
        writeRollup(mainDb, result.id, rollup, { status: 'stopped', reason: `imported from ${basename(file)}`, ...(stoppedAt ? { endedAt: stoppedAt } : {}) });
      }).immediate();
    } catch (err) {
      rmSync(target, { recursive: true, force: true });
      throw err;
    }
    return result;
  } finally {
    staging.remove();
  }
}
