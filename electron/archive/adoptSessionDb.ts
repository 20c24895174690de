import type Database from 'better-sqlite3';
import { EventIdMinter, firstEventId } from '../store/eventIds.ts';
import { latestVersion } from '../store/migrate.ts';
import { existingTables } from '../store/rollup.ts';
import { SESSION_DB_MIGRATIONS } from '../store/sessionDb.ts';
import { SEQUENCED_TABLES, SESSION_TABLE_NAMES, SESSION_TABLES, tableDdl } from '../store/sessionSchema.ts';
import { columnsOf } from '../store/tableColumns.ts';

// A session.db written by another tool that follows the spec lacks what this app adds (seq, the
// identity columns, session_meta, exec_events). Adoption adds them to an imported copy so the
// app, the API and the CLI read it like one of their own: missing tables are created, missing
// columns added (nullable: SQLite cannot add NOT NULL without a default), event ids minted and
// seq numbered across the event tables in timestamp order. The recorded values are not touched.

/** Tables a database must have to be taken for a session.db at all: those the spec defines. */
export const SPEC_REQUIRED_TABLES = ['net_events', 'model_calls', 'tool_calls', 'tool_responses', 'fs_events'] as const;

/** Whether the file already has everything this app reads (then adoption is not needed). */
export function needsAdoption(db: Database.Database): boolean {
  const tables = existingTables(db);
  return SESSION_TABLE_NAMES.some((t) => !tables.has(t) || Object.keys(SESSION_TABLES[t].columns).some((c) => !columnsOf(db, t).has(c)));
}

export function adoptSessionDb(db: Database.Database): void {
  db.transaction(() => {
    const tables = existingTables(db);
    let maxEventId: string | null = null;
    for (const table of SESSION_TABLE_NAMES) {
      const def = SESSION_TABLES[table];
      if (!tables.has(table)) {
        for (const statement of tableDdl(table, def)) db.exec(statement);
        continue;
      }
      const have = columnsOf(db, table);
      for (const [column, col] of Object.entries(def.columns)) {
        if (have.has(column)) continue;
        db.exec(
          `ALTER TABLE "${table}" ADD COLUMN ${column} ${col.type}${'default' in col && col.default !== undefined ? ` DEFAULT ${col.default}` : ''}`,
        );
      }
      if ('event_id' in def.columns) {
        const max = (db.prepare(`SELECT max(event_id) AS m FROM "${table}" WHERE length(event_id) = 12`).get() as { m: string | null }).m;
        if (max !== null && (maxEventId === null || max > maxEventId)) maxEventId = max;
      }
    }
    const minter = new EventIdMinter(firstEventId(maxEventId));
    for (const table of SESSION_TABLE_NAMES) {
      if (!('event_id' in SESSION_TABLES[table].columns)) continue;
      const setId = db.prepare(`UPDATE "${table}" SET event_id = ? WHERE rowid = ?`);
      // `rowid AS r`: selected bare, rowid comes back under the INTEGER PRIMARY KEY's own name.
      for (const { r } of db.prepare(`SELECT rowid AS r FROM "${table}" WHERE event_id IS NULL ORDER BY rowid`).all() as { r: number }[])
        setId.run(minter.mint(), r);
    }
    let seq = SEQUENCED_TABLES.reduce(
      (max, t) => Math.max(max, (db.prepare(`SELECT max(seq) AS m FROM ${t}`).get() as { m: number | null }).m ?? 0),
      0,
    );
    const unnumbered = SEQUENCED_TABLES.map((t) => `SELECT '${t}' AS t, rowid AS r, timestamp AS ts FROM ${t} WHERE seq IS NULL`).join(
      ' UNION ALL ',
    );
    for (const { t, r } of db.prepare(`${unnumbered} ORDER BY ts, t, r`).all() as { t: string; r: number }[]) {
      db.prepare(`UPDATE ${t} SET seq = ? WHERE rowid = ?`).run(++seq, r);
    }
    for (const table of SESSION_TABLE_NAMES) {
      for (const statement of tableDdl(table, SESSION_TABLES[table]).slice(1)) db.exec(statement);
    }
    db.pragma(`user_version = ${latestVersion(SESSION_DB_MIGRATIONS)}`);
  })();
}
