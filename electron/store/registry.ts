import type Database from 'better-sqlite3';
import { asDisplayName, type DisplayName, type SessionId } from '../contract/ids.ts';
import { newSessionId } from './newSessionId.ts';
import { thisRunner } from './sessionRunner.ts';
import type { SessionStatus } from './mainDb.ts';

/** One row of main.db's sessions table, as the rest of the code sees it. */
export interface SessionRecord {
  readonly id: SessionId;
  readonly name: DisplayName | null;
  readonly resumable: boolean;
  readonly mode: string;
  readonly command: string | null;
  readonly status: SessionStatus;
  readonly statusReason: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
  readonly stoppedAt: string | null;
  readonly rolledUpAt: string | null;
  readonly vacuumedAt: string | null;
  readonly totals: SessionTotals;
  readonly activity: SessionActivity;
}

/** What the events API lists beside the totals; null until the session has such an event. */
export interface SessionActivity {
  readonly lastEventAt: string | null;
  readonly inferenceHost: string | null;
  readonly agent: string | null;
}

export interface SessionTotals {
  readonly requests: number;
  readonly allowedRequests: number;
  readonly deniedRequests: number;
  readonly modelCalls: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly costUsd: number;
  readonly toolCalls: number;
  readonly mcpCalls: number;
  readonly fileEvents: number;
  readonly execCount: number;
  /** Rows that are session events (the ones with a seq). */
  readonly events: number;
}

export class NameTakenError extends Error {
  override name = 'NameTakenError';
}

interface SessionRow {
  /** main.db holds only ids minted by newSessionId or checked by asSessionId (imports). */
  id: SessionId;
  name: string | null;
  resumable: number;
  mode: string;
  command: string | null;
  status: SessionStatus;
  status_reason: string | null;
  created_at: string;
  updated_at: string;
  stopped_at: string | null;
  rolled_up_at: string | null;
  vacuumed_at: string | null;
  total_requests: number;
  allowed_requests: number;
  denied_requests: number;
  total_model_calls: number;
  total_input_tokens: number;
  total_output_tokens: number;
  total_estimated_cost: number;
  total_tool_calls: number;
  total_mcp_calls: number;
  total_file_events: number;
  exec_count: number;
  event_count: number;
  last_event_at: string | null;
  inference_host: string | null;
  agent: string | null;
}

function toRecord(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    name: row.name as DisplayName | null,
    resumable: row.resumable === 1,
    mode: row.mode,
    command: row.command,
    status: row.status,
    statusReason: row.status_reason,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    stoppedAt: row.stopped_at,
    rolledUpAt: row.rolled_up_at,
    vacuumedAt: row.vacuumed_at,
    totals: {
      requests: row.total_requests,
      allowedRequests: row.allowed_requests,
      deniedRequests: row.denied_requests,
      modelCalls: row.total_model_calls,
      inputTokens: row.total_input_tokens,
      outputTokens: row.total_output_tokens,
      costUsd: row.total_estimated_cost,
      toolCalls: row.total_tool_calls,
      mcpCalls: row.total_mcp_calls,
      fileEvents: row.total_file_events,
      execCount: row.exec_count,
      events: row.event_count,
    },
    activity: { lastEventAt: row.last_event_at, inferenceHost: row.inference_host, agent: row.agent },
  };
}

function holderOf(db: Database.Database, name: DisplayName): string | undefined {
  const row = db.prepare('SELECT id FROM sessions WHERE name = ? AND resumable = 1').get(name) as { id: string } | undefined;
  return row?.id;
}

function nameTaken(name: DisplayName, holder: string): NameTakenError {
  return new NameTakenError(`the name "${name}" is already used by session ${holder}; pick another or rename that one`);
}

export interface NewSession {
  readonly name?: string | null;
  readonly mode?: string;
  readonly command?: string | null;
  readonly createdAt?: string;
  /** Named sessions are kept to be resumed; pass false for a named one-off. */
  readonly resumable?: boolean;
}

/** Registers a new session: a fresh opaque id and, when given, its display name. */
export function registerSession(db: Database.Database, spec: NewSession = {}): SessionRecord {
  const id = newSessionId();
  const name = spec.name == null ? null : asDisplayName(spec.name);
  const resumable = name !== null && spec.resumable !== false;
  const now = spec.createdAt ?? new Date().toISOString();
  const runner = thisRunner();
  db.transaction(() => {
    if (name && resumable) {
      const holder = holderOf(db, name);
      if (holder) throw nameTaken(name, holder);
    }
    db.prepare(
      `INSERT INTO sessions (id, name, resumable, mode, command, status, created_at, updated_at, runner_pid, runner_start)
       VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)`,
    ).run(id, name, resumable ? 1 : 0, spec.mode ?? 'vm', spec.command ?? null, now, now, runner.pid, runner.start);
  }).immediate();
  return getSession(db, id)!;
}

export function getSession(db: Database.Database, id: SessionId): SessionRecord | null {
  const row = db.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
  return row ? toRecord(row) : null;
}

/** A rename touches the name field only: the id, its folder, its tabs and routes stay as they are. */
export function renameSession(db: Database.Database, id: SessionId, newName: string): SessionRecord {
  const name = asDisplayName(newName);
  db.transaction(() => {
    const current = getSession(db, id);
    if (!current) throw new Error(`no session with id ${id}`);
    if (current.resumable) {
      const holder = holderOf(db, name);
      if (holder && holder !== id) throw nameTaken(name, holder);
    }
    db.prepare('UPDATE sessions SET name = ?, updated_at = ? WHERE id = ?').run(name, new Date().toISOString(), id);
  }).immediate();
  return getSession(db, id)!;
}

/**
 * A resumed session is running again under its own id, recorded by this process; its figures are
 * rolled up again when it ends.
 */
export function markRunning(db: Database.Database, id: SessionId): SessionRecord {
  const runner = thisRunner();
  const changed = db
    .prepare(
      `UPDATE sessions SET status = 'running', status_reason = NULL, stopped_at = NULL, rolled_up_at = NULL, updated_at = ?,
       runner_pid = ?, runner_start = ? WHERE id = ?`,
    )
    .run(new Date().toISOString(), runner.pid, runner.start, id);
  if (changed.changes === 0) throw new Error(`no session with id ${id}`);
  return getSession(db, id)!;
}

/** An ended session that cannot be resumed gives its name up; the list still shows it by id. */
export function releaseName(db: Database.Database, id: SessionId): void {
  db.prepare('UPDATE sessions SET resumable = 0, updated_at = ? WHERE id = ?').run(new Date().toISOString(), id);
}

export function allSessions(db: Database.Database): SessionRecord[] {
  return (db.prepare('SELECT * FROM sessions ORDER BY created_at DESC, id').all() as SessionRow[]).map(toRecord);
}
