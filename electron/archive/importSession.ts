import type Database from 'better-sqlite3';
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { asDisplayName, isSessionId, type DisplayName, type SessionId } from '../contract/ids.ts';
import { siblingModule, startModuleWorker } from '../store/moduleWorker.ts';
import { newSessionId } from '../store/newSessionId.ts';
import { makePrivateFiles, sessionPaths, type CapsemHome } from '../store/paths.ts';
import { writeRollup } from '../store/rollup.ts';
import { ArchiveRejectedError, DEFAULT_IMPORT_LIMITS, type ImportLimits, type Manifest } from './archiveFormat.ts';
import { extractArchive, sniffFile } from './archiveReader.ts';
import { CONTENTS_MEMBER } from './contentsPack.ts';
import { openImportedDb } from './importedSchema.ts';
import { backupDb } from './sessionSnapshot.ts';
import { asImportError, type StagedDbFacts, type StagedDbJob, type StagedDbMessage } from './stagedDbCheck.ts';
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
  /** Triggers, views and foreign indexes removed from the imported copy, as `trigger "name"`. */
  readonly dropped: readonly string[];
  /** Workspace contents the archive carried, checked and in the home's content store. */
  readonly contents: number;
}

/**
 * Runs the staged database's check on a thread of its own, so a large file never stalls the thread
 * that serves the window and the live sessions. Past the time limit the thread is terminated: that
 * takes effect once the SQLite statement it is in returns, and the refusal waits for it, so the
 * staging folder is removed after the thread's last write, not before.
 */
function checkOffThread(job: StagedDbJob, limitSeconds: number, onStep: (done: number, total: number) => void): Promise<StagedDbFacts> {
  const worker = startModuleWorker(siblingModule(import.meta.url, 'stagedDbWorker'), { workerData: job });
  return new Promise((resolve, reject) => {
    let settle: (() => void) | null = null;
    const timer = setTimeout(() => {
      settle ??= () =>
        reject(new ArchiveRejectedError(`session.db validation took longer than ${limitSeconds} s, the import's time limit; refusing it`));
      void worker.terminate();
    }, limitSeconds * 1000);
    worker.on('message', (message: StagedDbMessage) => {
      if (settle) return;
      if (message.kind === 'step') onStep(message.done, message.total);
      else if (message.kind === 'checked') settle = () => resolve(message.facts);
      else if (message.kind === 'refused') settle = () => reject(new ArchiveRejectedError(message.message));
      else settle = () => reject(new Error(message.message));
    });
    worker.on('error', (err) => (settle ??= () => reject(err)));
    worker.on('exit', (code) => {
      clearTimeout(timer);
      (settle ?? (() => reject(new Error(`the import's check thread stopped (code ${code}) without an answer`))))();
    });
  });
}

/** Records the session's new identity in the staged copy, whose schema code is gone by now. */
function writeImportMeta(dbPath: string, meta: Record<string, string>): void {
  const db = openImportedDb(dbPath);
  try {
    const upsert = db.prepare('INSERT INTO session_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
    db.transaction(() => {
      for (const [key, value] of Object.entries(meta)) upsert.run(key, value);
    })();
  } catch (err) {
    throw asImportError(err);
  } finally {
    db.close();
  }
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
  const known = (id: SessionId): boolean =>
    mainDb.prepare('SELECT 1 FROM sessions WHERE id = ?').get(id) !== undefined || existsSync(sessionPaths(home, id).dir);
  if (wanted && isSessionId(wanted) && !known(wanted)) return wanted;
  for (;;) {
    const id = newSessionId();
    if (!known(id)) return id;
  }
}

export async function importSession(
  home: CapsemHome,
  mainDb: Database.Database,
  file: string,
  options: ImportOptions = {},
): Promise<ImportResult> {
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
      if (size > limits.maxMemberBytes)
        throw new ArchiveRejectedError(`${basename(file)} is ${size} bytes, over the import limit of ${limits.maxMemberBytes}`);
      try {
        // The backup API, not a file copy: a database with a -wal beside it is read whole.
        await backupDb(file, dbPath, (done, total) => options.onProgress?.('copy', done, total));
      } catch (err) {
        throw new ArchiveRejectedError(`${basename(file)} is not a readable SQLite database: ${(err as Error).message}`);
      }
    } else {
      manifest = await extractArchive(file, folder, limits, (done, total) => options.onProgress?.('verify', done, total));
    }

    const { root, runDir, sessionsRunDir, mainDbPath } = home;
    const contents = manifest?.members.some((m) => m.path === CONTENTS_MEMBER)
      ? { pack: join(folder, CONTENTS_MEMBER), home: { root, runDir, sessionsRunDir, mainDbPath } }
      : undefined;
    const facts = await checkOffThread(
      { dbPath, fromArchive: manifest !== null, ...(contents ? { contents } : {}) },
      limits.maxValidationSeconds,
      (done, total) => options.onProgress?.('check', done, total),
    );
    const carriedId = manifest?.sessionId ?? facts.meta.sessionId;
    const carriedName = manifest ? manifest.name : facts.meta.name;
    const id = freeId(home, mainDb, carriedId);
    const name = freeName(mainDb, carriedName);
    const { rollup } = facts;
    const now = (options.now ?? new Date()).toISOString();
    const createdAt = manifest?.createdAt ?? facts.meta.createdAt ?? rollup.activity.lastEventAt ?? now;
    const stoppedAt = manifest?.stoppedAt ?? rollup.activity.lastEventAt;
    writeImportMeta(dbPath, { session_id: id, name: name ?? '', imported_at: now, imported_from: carriedId ?? basename(file) });
    const result: ImportResult = {
      id,
      name,
      source: manifest ? 'archive' : 'session.db',
      adopted: facts.adopted,
      dropped: facts.dropped,
      contents: facts.contents,
      originalId: carriedId !== null && carriedId !== id ? carriedId : null,
      originalName: carriedName !== null && carriedName !== name ? carriedName : null,
    };
    makePrivateFiles(dbPath);
    rmSync(join(folder, CONTENTS_MEMBER), { force: true });

    const target = sessionPaths(home, result.id).dir;
    renameSync(folder, target);
    try {
      mainDb
        .transaction(() => {
          mainDb
            .prepare(
              `INSERT INTO sessions (id, name, resumable, mode, command, status, created_at, updated_at) VALUES (?, ?, 0, 'imported', NULL, 'stopped', ?, ?)`,
            )
            .run(result.id, result.name, createdAt, createdAt);
          writeRollup(mainDb, result.id, rollup, {
            status: 'stopped',
            reason: `imported from ${basename(file)}`,
            ...(stoppedAt ? { endedAt: stoppedAt } : {}),
          });
        })
        .immediate();
    } catch (err) {
      rmSync(target, { recursive: true, force: true });
      throw err;
    }
    return result;
  } finally {
    staging.remove();
  }
}
