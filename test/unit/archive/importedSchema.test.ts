import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchemaCode, openImportedDb, refuseVirtualTables } from '../../../electron/archive/importedSchema.ts';
import { checkStagedDb } from '../../../electron/archive/stagedDbCheck.ts';
import { sessionSchemaDdl } from '../../../electron/store/sessionSchema.ts';

// Schema rows a crafted file can hold but SQL cannot create: written here with writable_schema,
// which only a connection out of defensive mode (unsafeMode) may use, as an attacker's tool would.

const folder = mkdtempSync(join(tmpdir(), 'capsem-schema-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
let files = 0;

/** A session.db with our schema, then `sql`, then `schemaSql` run against sqlite_master itself. */
function crafted(sql: string, schemaSql = ''): string {
  const path = join(folder, `${++files}.db`);
  const db = new Database(path);
  for (const statement of sessionSchemaDdl()) db.exec(statement);
  db.exec(sql);
  db.unsafeMode(true);
  db.pragma('writable_schema = ON');
  db.exec(schemaSql);
  db.close();
  return path;
}

function withImported<T>(path: string, use: (db: Database.Database) => T): T {
  const db = openImportedDb(path);
  try {
    return use(db);
  } finally {
    db.close();
  }
}

describe('an imported schema', () => {
  it('keeps our own tables and indexes as they are', () => {
    const path = crafted('');
    expect(
      withImported(path, (db) => {
        refuseVirtualTables(db);
        return dropSchemaCode(db);
      }),
    ).toEqual([]);
  });

  it('refuses a virtual table whose statement hides VIRTUAL behind a comment and whose row has a root page', () => {
    const path = crafted(
      'CREATE TABLE planted (a)',
      "UPDATE sqlite_master SET sql = 'CREATE/* x */VIRTUAL TABLE planted USING fts5(a)' WHERE name = 'planted'",
    );
    expect(() => withImported(path, refuseVirtualTables)).toThrow(
      'session.db holds the virtual table "planted" (fts5); an imported session may hold plain tables only',
    );
  });

  it('refuses a virtual table of a module SQLite does not have', () => {
    const path = crafted(
      '',
      "INSERT INTO sqlite_master VALUES ('table', 'planted', 'planted', 0, 'CREATE VIRTUAL TABLE planted USING nosuch(a)')",
    );
    expect(() => withImported(path, refuseVirtualTables)).toThrow('session.db holds the virtual table "planted" (nosuch)');
  });

  // These rely on SQLite refusing the schema as a whole; the check must then refuse the file.
  for (const [what, row] of [
    [
      'a row whose type says table but whose statement makes a trigger',
      "('table', 'planted', 'planted', 0, 'CREATE TRIGGER planted AFTER INSERT ON session_meta BEGIN DELETE FROM net_events; END')",
    ],
    [
      'a trigger whose row gives it another name',
      "('trigger', 'innocent', 'session_meta', 0, 'CREATE TRIGGER planted AFTER INSERT ON session_meta BEGIN DELETE FROM net_events; END')",
    ],
    ['a table row without a statement', "('table', 'planted', 'planted', 0, NULL)"],
  ] as const) {
    it(`refuses ${what}`, () => {
      const path = crafted('', `INSERT INTO sqlite_master VALUES ${row}`);
      expect(() => checkStagedDb({ dbPath: path, fromArchive: true })).toThrow(
        /^session.db is not a readable SQLite database: malformed database schema/,
      );
    });
  }

  it('drops an index that has our name but not our definition, and shows names with their control characters escaped', () => {
    const path = crafted(
      'DROP INDEX net_events_seq; CREATE INDEX net_events_seq ON net_events(abs(seq)); CREATE VIEW "v\x1b[2J" AS SELECT 1',
    );
    expect(withImported(path, dropSchemaCode)).toEqual(['view "v\\u001b[2J"', 'index "net_events_seq"']);
    expect(withImported(path, (db) => db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'net_events_seq'").get())).toEqual({
      n: 0,
    });
  });
});
