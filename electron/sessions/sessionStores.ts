import { existsSync } from 'node:fs';
import { SessionEventStore } from './sessionEventStore.ts';
import type { SessionId } from '../contract/ids.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { existingTables } from '../store/rollup.ts';

// Read-only connections to session.db files, kept open while a window or an API client browses
// them: opening one costs a schema check, and a table scrolled at 60 pages a second should not pay
// it every page. The least recently used are closed past a small cap, so a long browsing day holds
// few handles.

const MAX_OPEN = 16;

export interface OpenSession {
  readonly store: SessionEventStore;
  /** Tables the file has now (a writer that just created the file may not have made them yet). */
  tables(): ReadonlySet<string>;
}

/** The session's session.db is not on disk: erased, vacuumed, or never recorded. */
export class SessionNotOnDiskError extends Error {
  override name = 'SessionNotOnDiskError';
}

interface Entry extends OpenSession {
  tableCache: { version: number; tables: Set<string> } | null;
}

export class SessionStores {
  private readonly open = new Map<string, Entry>();

  constructor(private readonly home: CapsemHome) {}

  /** The session's store; a SessionNotOnDiskError when its session.db is gone or never made. */
  get(id: SessionId): OpenSession {
    const known = this.open.get(id);
    if (known) {
      this.open.delete(id);
      this.open.set(id, known);
      return known;
    }
    const { dbPath } = sessionPaths(this.home, id);
    if (!existsSync(dbPath)) throw new SessionNotOnDiskError(`session ${id} has no session.db on disk (erased or never recorded)`);
    const store = SessionEventStore.open(id, dbPath);
    const entry: Entry = {
      store,
      tableCache: null,
      tables() {
        const version = store.dataVersion();
        if (!entry.tableCache || (entry.tableCache.tables.size === 0 && entry.tableCache.version !== version))
          entry.tableCache = { version, tables: existingTables(store.db) };
        return entry.tableCache.tables;
      },
    };
    this.open.set(id, entry);
    for (const [oldId, old] of this.open) {
      if (this.open.size <= MAX_OPEN) break;
      old.store.close();
      this.open.delete(oldId);
    }
    return entry;
  }

  /** Closes the session's connection, if open (before its files are erased). */
  forget(id: SessionId): void {
    this.open.get(id)?.store.close();
    this.open.delete(id);
  }

  close(): void {
    for (const entry of this.open.values()) entry.store.close();
    this.open.clear();
  }
}
