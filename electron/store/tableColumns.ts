import type Database from 'better-sqlite3';

/** The columns a table of this file has now: none when the table is not there. */
export function columnsOf(db: Database.Database, table: string): Set<string> {
  return new Set((db.prepare(`PRAGMA table_info("${table}")`).all() as { name: string }[]).map((c) => c.name));
}
