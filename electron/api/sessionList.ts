import type Database from 'better-sqlite3';
import type { SessionId } from '../contract/ids.ts';
import { rfc3339 } from '../sessions/eventBuilders.ts';
import { firstPromptTitle, readListFacts, type SessionListFacts } from '../sessions/sessionListFacts.ts';
import { SessionNotOnDiskError, type SessionStores } from '../sessions/sessionStores.ts';
import { sessionFigures } from '../sessions/sessionSummary.ts';
import { endAbandonedSessions } from '../store/abandonedSessions.ts';
import { sizeOf } from '../store/fileSizes.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { allSessions, type SessionRecord } from '../store/registry.ts';
import { vacuumedFiles } from '../store/vacuumedFiles.ts';

// GET /v1/sessions: one row per session, in the spec's fields (absent rather than zero when
// unknown), newest first.

/**
 * Our archive is the vacuumed sessions, and nothing prunes it: a session leaves it only when it
 * is erased. 0 says "no bound" in both figures.
 */
const ARCHIVE_BOUNDS = { maxBytes: 0, retentionDays: 0 } as const;

export interface ArchiveFigures {
  readonly bytes: number;
  readonly maxBytes: number;
  readonly retentionDays: number;
}

export interface SessionListing {
  readonly sessions: Record<string, unknown>[];
  readonly archive?: ArchiveFigures;
}

const isSqliteError = (err: unknown): boolean => String((err as { code?: unknown } | null)?.code).startsWith('SQLITE_');

/** Reads what main.db does not hold from each session.db, once for an ended session, every time for a running one. */
export class SessionListReader {
  private readonly ended = new Map<SessionId, SessionListFacts>();
  /** First wins: once a session has a prompt title it keeps it. */
  private readonly titles = new Map<SessionId, string>();

  constructor(
    private readonly home: CapsemHome,
    private readonly mainDb: Database.Database,
    private readonly stores: SessionStores,
  ) {}

  forget(id: SessionId): void {
    this.ended.delete(id);
    this.titles.delete(id);
  }

  private facts(record: SessionRecord): { facts: SessionListFacts; title: string | undefined } {
    const running = record.status === 'running';
    const known = running ? undefined : this.ended.get(record.id);
    if (known) return { facts: known, title: this.titles.get(record.id) };
    let facts: SessionListFacts;
    let title = this.titles.get(record.id);
    try {
      const open = this.stores.get(record.id);
      const tables = open.tables();
      facts = readListFacts(open.store, tables);
      if (title === undefined) {
        title = firstPromptTitle(open.store, tables);
        if (title !== undefined) this.titles.set(record.id, title);
      }
    } catch (err) {
      // Erased or vacuumed since main.db was read: the row goes out without these figures.
      if (err instanceof SessionNotOnDiskError) return { facts: {}, title: undefined };
      // A session.db SQLite cannot read (empty, damaged, missing a table) costs only its own
      // row's extras, never the list; an ended one is not read again, as a readable one is not.
      if (!isSqliteError(err)) throw err;
      facts = {};
    }
    if (!running) this.ended.set(record.id, facts);
    return { facts, title };
  }

  /** A session no longer resident has only main.db's rollup, which counts cache tokens per model. */
  private archivedTokens(id: SessionId): number | undefined {
    const row = this.mainDb
      .prepare('SELECT sum(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens) AS v FROM ai_usage WHERE session_id = ?')
      .get(id) as { v: number | null };
    return row.v ?? undefined;
  }

  list(archived: boolean): SessionListing {
    const rows: Record<string, unknown>[] = [];
    let archiveBytes = 0;
    // A session whose recorder was killed since the last request is ended first, so it lists crashed.
    endAbandonedSessions(this.home, this.mainDb);
    for (const record of allSessions(this.mainDb)) {
      // Erased means gone: its figures stay in main.db for the cost ledger, but it is no session to list.
      if (record.status === 'erased') continue;
      const { onDisk: resident, totals, activity } = sessionFigures(this.home, record);
      if (!resident && !archived) continue;
      const { facts, title } = resident ? this.facts(record) : { facts: { totalTokens: this.archivedTokens(record.id) }, title: undefined };
      const row: Record<string, unknown> = {
        id: record.id,
        name: record.name,
        // Row times come from session.db, which another tool may have written: Go decodes RFC 3339 alone.
        createdAt: rfc3339(record.createdAt),
        updatedAt: rfc3339(activity.lastEventAt ?? record.updatedAt),
        // main.db counts rows; a session read from its session.db counts events as its pages do.
        eventCount: facts.events ?? totals.events,
        active: false,
        status: record.status,
      };
      const shown = record.name ?? title;
      if (shown) row.title = shown;
      if (activity.agent) row.agent = activity.agent;
      if (facts.totalTokens) row.totalTokens = Math.round(facts.totalTokens);
      if (totals.modelCalls > 0) row.costMicros = Math.round(totals.costUsd * 1e6);
      if (facts.promptContext) row.promptContext = { ...facts.promptContext, at: rfc3339(facts.promptContext.at) };
      if (activity.inferenceHost) row.inferenceHost = activity.inferenceHost;
      if (facts.procs) row.procs = facts.procs;
      if (facts.lastRequestAt) row.lastRequestAt = rfc3339(facts.lastRequestAt);
      if (!resident) {
        row.resident = false;
        archiveBytes += sizeOf(Object.values(vacuumedFiles(sessionPaths(this.home, record.id))));
      }
      rows.push(row);
    }
    rows.sort((a, b) => String(b.updatedAt).localeCompare(String(a.updatedAt)));
    // The spec's active is the one most recently updated session, not every running one (status says that).
    const newest = rows.find((r) => r.resident === undefined);
    if (newest) newest.active = true;
    return archived ? { sessions: rows, archive: { bytes: archiveBytes, ...ARCHIVE_BOUNDS } } : { sessions: rows };
  }
}
