import type Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import type { SessionSummary, StartProgress } from '../contract/appContract.ts';
import type { SessionId } from '../contract/ids.ts';
import { sessionPaths, type CapsemHome } from '../store/paths.ts';
import { allSessions, getSession, type SessionRecord, type SessionTotals } from '../store/registry.ts';
import { liveRollup } from '../store/rollup.ts';
import { CallFailure } from './callFailure.ts';

// sessions.list and sessions.info: main.db's registry and totals, with a running session's
// figures read from its live session.db (main.db has them only once it is rolled up), so the list
// moves while an agent works.

export interface ListContext {
  readonly home: CapsemHome;
  readonly mainDb: Database.Database;
  /** Ids of the sessions whose VM runs in this process. */
  readonly live: ReadonlySet<string>;
  /** What a start under way in this process is doing, by session id. */
  readonly starting?: (id: string) => StartProgress | null;
  readonly now?: number;
}

function liveTotals(home: CapsemHome, record: SessionRecord): SessionTotals {
  if (record.status !== 'running') return record.totals;
  try {
    return liveRollup(home, record.id)?.totals ?? record.totals;
  } catch {
    // A writer mid-migration or a file being erased: the registry's figures are the best we have.
    return record.totals;
  }
}

export function summaryOf(ctx: ListContext, record: SessionRecord): SessionSummary {
  const onDisk = existsSync(sessionPaths(ctx.home, record.id).dbPath);
  const totals = onDisk ? liveTotals(ctx.home, record) : record.totals;
  const created = Date.parse(record.createdAt);
  const end = record.stoppedAt ? Date.parse(record.stoppedAt) : record.status === 'running' ? (ctx.now ?? Date.now()) : Date.parse(record.updatedAt);
  return {
    id: record.id,
    name: record.name,
    status: record.status,
    statusReason: record.statusReason,
    mode: record.mode,
    command: record.command,
    createdAt: record.createdAt,
    stoppedAt: record.stoppedAt,
    durationMs: Number.isNaN(created) || Number.isNaN(end) ? 0 : Math.max(0, end - created),
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

export function listSessions(ctx: ListContext): SessionSummary[] {
  return allSessions(ctx.mainDb).map((r) => summaryOf(ctx, r));
}

export function sessionRecord(mainDb: Database.Database, id: SessionId): SessionRecord {
  const record = getSession(mainDb, id);
  if (!record) throw new CallFailure('unknown_session', `no session with id ${id}`);
  return record;
}
