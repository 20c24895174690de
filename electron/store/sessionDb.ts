import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { assertNotNewer, migrate, type Migration } from './migrate.ts';
import { makePrivateFiles } from './paths.ts';
import { columnSql, SESSION_TABLES, sessionSchemaDdl, tableDdl } from './sessionSchema.ts';
import { columnsOf } from './tableColumns.ts';

export const SESSION_DB_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    up: (db) => {
      for (const statement of sessionSchemaDdl()) db.exec(statement);
    },
  },
  {
    // VM sessions: the commands run in the guest. Version 1 databases were made before it.
    version: 2,
    up: (db) => {
      for (const statement of tableDdl('exec_events', SESSION_TABLES.exec_events)) db.exec(statement);
    },
  },
  {
    // Containment: frames of upgraded connections, and the parser failure kept on the exchange's row.
    version: 3,
    up: (db) => {
      const columns = columnsOf(db, 'net_events');
      if (!columns.has('parse_error')) db.exec('ALTER TABLE net_events ADD COLUMN parse_error TEXT');
      for (const statement of tableDdl('ws_frames', SESSION_TABLES.ws_frames)) db.exec(statement);
    },
  },
  {
    // Changes inside .git/ and node_modules/ are summarised: a row says how many paths it stands for.
    // The transparent path: each name the guest looked up through the agent's DNS answerer.
    version: 4,
    up: (db) => {
      const columns = columnsOf(db, 'fs_events');
      if (!columns.has('entries')) db.exec('ALTER TABLE fs_events ADD COLUMN entries INTEGER');
      for (const statement of tableDdl('dns_events', SESSION_TABLES.dns_events)) db.exec(statement);
    },
  },
  {
    // Keys stay on the host: what the credential broker substituted, refused or let through.
    version: 5,
    up: (db) => {
      for (const statement of tableDdl('substitution_events', SESSION_TABLES.substitution_events)) db.exec(statement);
    },
  },
  {
    // Readers read what was recorded: the wire format a model call was read in.
    version: 6,
    up: (db) => {
      const columns = columnsOf(db, 'model_calls');
      if (!columns.has('wire')) db.exec('ALTER TABLE model_calls ADD COLUMN wire TEXT');
    },
  },
  {
    // The story (#30): the Claude Code agent of each request, and what its model calls' bodies tell.
    version: 7,
    up: (db) => {
      const columns = columnsOf(db, 'net_events');
      for (const name of ['agent_id', 'parent_agent_id', 'side_call', 'conversation_hash'] as const) {
        const sql = columnSql(name, SESSION_TABLES.net_events.columns[name]);
        if (!columns.has(name)) db.exec(`ALTER TABLE net_events ADD COLUMN ${sql}`);
      }
      for (const statement of tableDdl('story_marks', SESSION_TABLES.story_marks)) db.exec(statement);
    },
  },
  {
    // What the agent changed (#31): each change's content before and after, and the workspace's baseline.
    version: 8,
    up: (db) => {
      const columns = columnsOf(db, 'fs_events');
      for (const name of ['before_hash', 'after_hash', 'before_mode', 'after_mode', 'note'] as const) {
        const sql = columnSql(name, SESSION_TABLES.fs_events.columns[name]);
        if (!columns.has(name)) db.exec(`ALTER TABLE fs_events ADD COLUMN ${sql}`);
      }
      for (const statement of tableDdl('workspace_files', SESSION_TABLES.workspace_files)) db.exec(statement);
    },
  },
];

/**
 * The writer's connection: WAL so readers never block it, synchronous=NORMAL while live (a
 * process crash loses nothing committed; only power loss can lose the last transactions).
 */
export function openSessionDbForWriting(path: string, migrations = SESSION_DB_MIGRATIONS): Database.Database {
  const db = new Database(path);
  try {
    // 32 KiB pages: a recorded body larger than a page is written as a chain of overflow pages,
    // and halving the pages a body takes cut the writer thread's CPU per MB recorded by a quarter
    // (a 20 MB burst of downloads 57 -> 43 ms, SQLite's copies, WAL frames and checkpoints alike).
    // 64 KiB pages cost no less, and an empty session.db twice the 1.1 MiB. Page size only takes
    // effect on a new file, before WAL is switched on.
    db.pragma('page_size = 32768');
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    db.pragma('cache_size = -16384');
    // 64 MiB of WAL between checkpoints, as with the 16 KiB pages before.
    db.pragma('wal_autocheckpoint = 2048');
    migrate(db, `session database ${path}`, migrations);
    makePrivateFiles(path);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

export class SessionDbMissingError extends Error {
  override name = 'SessionDbMissingError';
}

/** A reader's connection: refuses writes, and refuses a file from a newer Capsem. */
export function openSessionDbReadOnly(path: string): Database.Database {
  if (!existsSync(path)) throw new SessionDbMissingError(`no session database at ${path}`);
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    // The file may be an imported one: what is left of its own schema (a generated column, a
    // CHECK) may call innocuous functions only. Our schema calls no other kind.
    db.pragma('trusted_schema = OFF');
    assertNotNewer(db, `session database ${path}`, SESSION_DB_MIGRATIONS);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}
