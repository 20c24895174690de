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

/** A session.db's session_meta as one record. */
export function sessionMeta(dbPath: string): Record<string, string> {
  return Object.fromEntries(
    sessionRows<{ key: string; value: string }>(dbPath, 'SELECT key, value FROM session_meta').map((r) => [r.key, r.value]),
  );
}
