import type Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import type { SessionSummary, StartProgress } from '../contract/appContract.ts';
import { endAbandonedSessions } from '../store/abandonedSessions.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { allSessions, type SessionActivity, type SessionRecord, type SessionTotals } from '../store/registry.ts';
import { liveRollup } from '../store/rollup.ts';

// A session's figures, computed once for the window's list, `capsem list` and GET /v1/sessions:
// main.db's registry and totals, with a running session's figures read from its live session.db
// (main.db has them only once it is rolled up), so the list moves while an agent works.

export interface SessionFigures {
  /** Whether its session.db is still on disk (not vacuumed or erased). */
  readonly onDisk: boolean;
  readonly totals: SessionTotals;
  readonly activity: SessionActivity;
  /** From creation to its stop; to now while it runs; to its last update when it ended without a stop time. */
  readonly durationMs: number;
}

export function sessionFigures(home: CapsemHome, record: SessionRecord, now = Date.now()): SessionFigures {
  const onDisk = existsSync(sessionPaths(home, record.id).dbPath);
  let live = null;
  if (onDisk && record.status === 'running') {
    try {
      live = liveRollup(home, record.id);
    } catch {
      // A writer mid-migration or a file being erased: the registry's figures are the best we have.
    }
  }
  const created = Date.parse(record.createdAt);
  const end = record.stoppedAt ? Date.parse(record.stoppedAt) : record.status === 'running' ? now : Date.parse(record.updatedAt);
  return {
    onDisk,
    totals: live?.totals ?? record.totals,
    activity: live?.activity ?? record.activity,
    durationMs: Number.isNaN(created) || Number.isNaN(end) ? 0 : Math.max(0, end - created),
  };
}

export interface ListContext {
  readonly home: CapsemHome;
  readonly mainDb: Database.Database;
  /** Ids of the sessions whose VM runs in this process. */
  readonly live: ReadonlySet<string>;
  /** What a start under way in this process is doing, by session id. */
  readonly starting?: (id: string) => StartProgress | null;
  readonly now?: number;
}

/** The window's row for a session (sessions.list and sessions.info). */
export function summaryOf(ctx: ListContext, record: SessionRecord): SessionSummary {
  const { onDisk, totals, durationMs } = sessionFigures(ctx.home, record, ctx.now);
  return {
    id: record.id,
    name: record.name,
    status: record.status,
    statusReason: record.statusReason,
    mode: record.mode,
    command: record.command,
    createdAt: record.createdAt,
    stoppedAt: record.stoppedAt,
    durationMs,
    costUsd: totals.costUsd,
    inputTokens: totals.inputTokens,
    outputTokens: totals.outputTokens,
    requests: totals.requests,
    deniedRequests: totals.deniedRequests,
    modelCalls: totals.modelCalls,
    toolCalls: totals.toolCalls,
    fileEvents: totals.fileEvents,
    onDisk,
    live: ctx.live.has(record.id),
    // What VmHost.resume checks first (it says why not for anything else, e.g. a lost disk).
    resumable: record.mode === 'vm' && record.resumable && onDisk,
    starting: ctx.starting?.(record.id) ?? null,
  };
}

/** Every session's row; one whose recorder was killed since the last look is ended first, so it reads crashed. */
export function listSessions(ctx: ListContext): SessionSummary[] {
  endAbandonedSessions(ctx.home, ctx.mainDb);
  return allSessions(ctx.mainDb).map((r) => summaryOf(ctx, r));
}
