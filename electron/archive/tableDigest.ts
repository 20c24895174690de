import type Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existingTables } from '../store/rollup.ts';

// Row counts and a content checksum per table, so an export and its import can be compared
// table by table. The checksum covers every column of every row in rowid order; `skip` leaves out
// rows an import had to rewrite (the session id and name kept in session_meta).

export function tableCounts(db: Database.Database): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const table of [...existingTables(db)].filter((t) => !t.startsWith('sqlite_')).sort()) {
    counts[table] = (db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n;
  }
  return counts;
}

function feed(hash: ReturnType<typeof createHash>, value: unknown): void {
  if (value === null || value === undefined) hash.update('\u0000N');
  else if (value instanceof Uint8Array) hash.update(`\u0000B${value.byteLength}:`).update(value);
  else hash.update(`\u0000${typeof value}:${String(value)}`);
}

export function tableDigests(
  db: Database.Database,
  skip: (table: string, row: Record<string, unknown>) => boolean = () => false,
): Record<string, { rows: number; sha256: string }> {
  const out: Record<string, { rows: number; sha256: string }> = {};
  for (const table of [...existingTables(db)].filter((t) => !t.startsWith('sqlite_')).sort()) {
    const hash = createHash('sha256');
    let rows = 0;
    for (const row of db.prepare(`SELECT * FROM "${table}" ORDER BY rowid`).iterate() as IterableIterator<Record<string, unknown>>) {
      if (skip(table, row)) continue;
      rows += 1;
      for (const [column, value] of Object.entries(row)) {
        hash.update(`\u0001${column}`);
        feed(hash, value);
      }
    }
    out[table] = { rows, sha256: hash.digest('hex') };
  }
  return out;
}
