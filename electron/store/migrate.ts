import type Database from 'better-sqlite3';

export interface Migration {
  readonly version: number;
  readonly up: (db: Database.Database) => void;
}

export class SchemaVersionError extends Error {
  override name = 'SchemaVersionError';
}

export function latestVersion(migrations: readonly Migration[]): number {
  return migrations.reduce((max, m) => Math.max(max, m.version), 0);
}

/** A file from a newer Capsem is refused before anything reads or writes it. */
export function assertNotNewer(db: Database.Database, what: string, migrations: readonly Migration[]): number {
  const version = db.pragma('user_version', { simple: true }) as number;
  const supported = latestVersion(migrations);
  if (version > supported) {
    throw new SchemaVersionError(
      `${what} has schema version ${version}, newer than this Capsem supports (${supported}); upgrade Capsem to open it`,
    );
  }
  return version;
}

/** Applies each migration above the file's user_version, each in its own transaction. */
export function migrate(db: Database.Database, what: string, migrations: readonly Migration[]): void {
  const current = assertNotNewer(db, what, migrations);
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (m.version <= current) continue;
    db.transaction(() => {
      m.up(db);
      db.pragma(`user_version = ${m.version}`);
    }).immediate();
  }
}
