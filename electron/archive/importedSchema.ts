import Database from 'better-sqlite3';
import { sessionSchemaDdl } from '../store/sessionSchema.ts';
import { ArchiveRejectedError } from './archiveFormat.ts';

// An imported session.db brings its own schema, and a schema can carry code. A trigger runs with
// our privileges on our own writes (adoption's UPDATEs, the session_meta upsert); a view or a
// virtual table can stand where one of our tables is expected; an index on an expression or with
// a WHERE is evaluated on every write to its table. Our schema is plain tables and plain indexes
// and nothing else, so that is all an import keeps:
// - a virtual table refuses the file. Reading one runs its module (fts5, rtree, ...) over shadow
//   tables the file wrote, and so does dropping one (the module's destroy step); even
//   quick_check constructs them.
// - triggers, views and indexes other than ours are dropped, before anything else writes to the
//   staged copy. DROP removes the schema row and executes nothing; our indexes are rebuilt after.
// The kind of each object is read from its CREATE statement, which is what SQLite obeys (a
// virtual table's row says 'table', and a comment may sit between CREATE and VIRTUAL). SQLite
// itself refuses as malformed a schema row whose type or name disagrees with its statement, or
// that has no statement and is not a constraint's index.
// Every connection to an imported file runs with trusted_schema OFF (an expression left in a
// table's definition, a CHECK or a generated column, may then call innocuous functions only) and
// foreign_keys OFF (the file's ON UPDATE actions do not ride on our writes). better-sqlite3 opens
// connections in defensive mode, so the file cannot reach its own schema through SQL either.

export function openImportedDb(path: string): Database.Database {
  const db = new Database(path, { fileMustExist: true });
  try {
    db.pragma('trusted_schema = OFF');
    db.pragma('foreign_keys = OFF');
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

type ObjectKind = 'table' | 'virtual table' | 'view' | 'trigger' | 'index';

interface SchemaRow {
  readonly type: string;
  readonly name: string;
  readonly sql: string | null;
}

const COMMENTS = /\/\*[\s\S]*?(?:\*\/|$)|--[^\n]*/g;
const CREATE = /^\s*create\s+(?:(?:temp|temporary)\s+)?(?:unique\s+)?(virtual\s+table|table|view|trigger|index)\b/i;

/** A name from the file as it may be shown: quoted, control characters escaped, cut short. */
const shown = (name: string): string => JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name);

function kindOf(row: SchemaRow): ObjectKind {
  // SQLite loads a row without a statement only as the index of a UNIQUE or PRIMARY KEY constraint.
  if (row.sql === null) return 'index';
  const kind = CREATE.exec(row.sql.replace(COMMENTS, ' '))?.[1]?.toLowerCase().replace(/\s+/, ' ') as ObjectKind | undefined;
  if (!kind)
    throw new ArchiveRejectedError(`session.db's schema has a ${row.type} ${shown(row.name)} whose statement this app does not recognise`);
  return kind;
}

function moduleOf(sql: string): string {
  return /\busing\s+["'`[]?(\w{1,40})/i.exec(sql.replace(COMMENTS, ' '))?.[1] ?? 'unknown module';
}

function schemaRows(db: Database.Database): SchemaRow[] {
  return db.prepare('SELECT type, name, sql FROM sqlite_master').all() as SchemaRow[];
}

let ourIndexSql: ReadonlyMap<string, string> | null = null;

/** Our indexes as SQLite stores their statements, name to text. */
function ourIndexes(): ReadonlyMap<string, string> {
  if (ourIndexSql) return ourIndexSql;
  const db = new Database(':memory:');
  try {
    for (const statement of sessionSchemaDdl()) db.exec(statement);
    const rows = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL").all() as {
      name: string;
      sql: string;
    }[];
    ourIndexSql = new Map(rows.map((r) => [r.name, r.sql]));
    return ourIndexSql;
  } finally {
    db.close();
  }
}

const isOurIndex = (row: SchemaRow): boolean => row.sql === null || ourIndexes().get(row.name) === row.sql;

/** Refuses a file with a virtual table. Reads nothing but the schema rows, so it runs first. */
export function refuseVirtualTables(db: Database.Database): void {
  for (const row of schemaRows(db)) {
    if (kindOf(row) === 'virtual table') {
      throw new ArchiveRejectedError(
        `session.db holds the virtual table ${shown(row.name)} (${moduleOf(row.sql!)}); an imported session may hold plain tables only`,
      );
    }
  }
}

/**
 * Drops every trigger, view and foreign index, and returns what it dropped (`trigger "x"`).
 * Run it on the staged copy before any other write.
 */
export function dropSchemaCode(db: Database.Database): string[] {
  const doomed = (rows: SchemaRow[]): { kind: ObjectKind; name: string }[] => {
    const found = rows.map((row) => ({ kind: kindOf(row), name: row.name, row }));
    const order: ObjectKind[] = ['trigger', 'view', 'index'];
    return order.flatMap((kind) => found.filter((f) => f.kind === kind && (kind !== 'index' || !isOurIndex(f.row))));
  };
  const dropped = doomed(schemaRows(db));
  db.transaction(() => {
    for (const { kind, name } of dropped) db.exec(`DROP ${kind.toUpperCase()} "${name.replace(/"/g, '""')}"`);
  })();
  return dropped.map(({ kind, name }) => `${kind} ${shown(name)}`);
}
