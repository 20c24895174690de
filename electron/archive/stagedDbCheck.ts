import type Database from 'better-sqlite3';
import { assertNotNewer } from '../store/migrate.ts';
import type { CapsemHome } from '../store/paths.ts';
import { computeRollup, existingTables, type Rollup } from '../store/rollup.ts';
import { SESSION_DB_MIGRATIONS } from '../store/sessionDb.ts';
import { SESSION_TABLE_NAMES, SESSION_TABLES, tableDdl } from '../store/sessionSchema.ts';
import { adoptSessionDb, needsAdoption, SPEC_REQUIRED_TABLES } from './adoptSessionDb.ts';
import { ArchiveRejectedError } from './archiveFormat.ts';
import { dropSchemaCode, openImportedDb, refuseVirtualTables } from './importedSchema.ts';

// Everything an import does to the staged session.db before it is kept: refuse what cannot be
// read safely, check every page, drop what would run code, adopt a file from another tool, and
// compute the figures for main.db. It reads and writes only the staged copy, and takes time in
// proportion to the file, so the import runs it on a thread of its own (stagedDbWorker.ts).

export interface StagedDbFacts {
  /** The file came from another tool and was given this app's columns. */
  readonly adopted: boolean;
  /** Triggers, views and foreign indexes removed from the copy, as `trigger "name"`. */
  readonly dropped: readonly string[];
  /** What the file's session_meta says about itself, when it has one. */
  readonly meta: { readonly sessionId: string | null; readonly name: string | null; readonly createdAt: string | null };
  readonly rollup: Rollup;
  /** Workspace contents the archive carried, checked and in the home's store. */
  readonly contents: number;
}

export interface StagedDbJob {
  readonly dbPath: string;
  /** The file came in a Capsem archive (so it must be a Capsem session.db, not newer than us). */
  readonly fromArchive: boolean;
  /** The archive's contents.pack, staged, and the home whose content store takes it once the session.db passes. */
  readonly contents?: { readonly pack: string; readonly home: CapsemHome };
}

/** What the check's thread tells the import: steps as they pass, then one answer. */
export type StagedDbMessage =
  | { readonly kind: 'step'; readonly done: number; readonly total: number }
  | { readonly kind: 'checked'; readonly facts: StagedDbFacts }
  | { readonly kind: 'refused'; readonly message: string }
  | { readonly kind: 'failed'; readonly message: string };

/** Progress steps: schema, pages, dropping code, adoption, figures. */
const STEPS = 5;

export function checkStagedDb(job: StagedDbJob, onStep: (done: number, total: number) => void = () => {}): StagedDbFacts {
  let db: Database.Database;
  try {
    db = openImportedDb(job.dbPath);
    db.prepare('SELECT count(*) FROM sqlite_master').get();
  } catch (err) {
    throw new ArchiveRejectedError(`session.db is not a readable SQLite database: ${(err as Error).message}`);
  }
  const step = (n: number): void => onStep(n, STEPS);
  try {
    step(0);
    refuseVirtualTables(db);
    step(1);
    // quick_check reads every page (O(N)) without cross-checking indexes: integrity_check's extra
    // cost buys nothing here, since the members' checksums already pin the bytes the exporter wrote.
    const problems = (db.prepare('SELECT quick_check AS s FROM pragma_quick_check LIMIT 3').all() as { s: string }[]).map((r) => r.s);
    if (problems.length !== 1 || problems[0] !== 'ok') throw new ArchiveRejectedError(`session.db is damaged: ${problems.join('; ')}`);
    const tables = existingTables(db);
    if (job.fromArchive || tables.has('session_meta')) {
      try {
        assertNotNewer(db, 'the imported session.db', SESSION_DB_MIGRATIONS);
      } catch (err) {
        throw new ArchiveRejectedError((err as Error).message);
      }
    }
    const missing = SPEC_REQUIRED_TABLES.filter((t) => !tables.has(t));
    if (missing.length > 0)
      throw new ArchiveRejectedError(`not a session database: it lacks the table${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
    step(2);
    const dropped = dropSchemaCode(db);
    step(3);
    const adopted = needsAdoption(db);
    if (adopted) adoptSessionDb(db);
    else restoreOurIndexes(db);
    step(4);
    const meta = metaOf(db);
    const rollup = computeRollup(db);
    step(5);
    return {
      adopted,
      dropped,
      meta: { sessionId: meta.get('session_id') ?? null, name: meta.get('name') || null, createdAt: meta.get('created_at') ?? null },
      rollup,
      contents: 0,
    };
  } finally {
    db.close();
  }
}

/** Our indexes where a foreign one of the same name was dropped (a no-op when all are there). */
function restoreOurIndexes(db: Database.Database): void {
  for (const table of SESSION_TABLE_NAMES) {
    for (const statement of tableDdl(table, SESSION_TABLES[table]).slice(1)) db.exec(statement);
  }
}

function metaOf(db: Database.Database): Map<string, string> {
  if (!existingTables(db).has('session_meta')) return new Map();
  return new Map(
    (db.prepare('SELECT key, value FROM session_meta').all() as { key: string; value: string | null }[]).map((r) => [r.key, r.value ?? '']),
  );
}

/** SQLite errors that say something about this machine (disk, memory, permissions), not the file. */
const MACHINE_ERROR = /^SQLITE_(FULL|IOERR|NOMEM|CANTOPEN|PERM|BUSY|LOCKED|READONLY)/;

/**
 * An error met while reading or writing the imported file, as the import reports it: SQLite
 * refusing something in the file (a constraint, an unsafe function in its schema, a damaged page)
 * is the file's fault and refuses it; the machine's own trouble stays what it is.
 */
export function asImportError(err: unknown): Error {
  if (err instanceof ArchiveRejectedError) return err;
  const e = err instanceof Error ? err : new Error(String(err));
  const code = (e as { code?: unknown }).code;
  if (e.name === 'SqliteError' && typeof code === 'string' && !MACHINE_ERROR.test(code))
    return new ArchiveRejectedError(`session.db cannot be imported: ${e.message}`);
  return e;
}
