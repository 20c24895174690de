import Database from 'better-sqlite3';

/** Rows of a query on a session.db, read-only, as a test inspects what was recorded. */
export function sessionRows<T>(dbPath: string, sql: string, ...params: unknown[]): T[] {
  const db = new Database(dbPath, { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}
