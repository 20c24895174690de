import type Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import type { SessionId } from '../contract/ids.ts';
import type { SessionStatus } from './mainDb.ts';
import { sessionPaths, type CapsemHome } from './paths.ts';
import type { SessionActivity, SessionTotals } from './registry.ts';
import { SEQUENCED_TABLES } from './sessionSchema.ts';
import { openSessionDbReadOnly } from './sessionDb.ts';

// The rollup folds a session.db into main.db figures. It reads the session read-only and replaces
// the session's main.db rows in one transaction, so running it twice gives the same rows.

export interface AiUsageRow {
  provider: string;
  model: string;
  call_count: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  estimated_cost: number;
  total_duration_ms: number;
}

export interface ToolUsageRow {
  tool_name: string;
  origin: string;
  call_count: number;
  error_count: number;
  total_duration_ms: number;
  bytes_sent: number;
  bytes_received: number;
}

export interface McpUsageRow {
  server_name: string;
  call_count: number;
  error_count: number;
  total_duration_ms: number;
  bytes_sent: number;
  bytes_received: number;
}

export interface Rollup {
  readonly totals: SessionTotals;
  readonly activity: SessionActivity;
  readonly aiUsage: AiUsageRow[];
  readonly toolUsage: ToolUsageRow[];
  readonly mcpUsage: McpUsageRow[];
}

export function existingTables(db: Database.Database): Set<string> {
  const rows = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
  return new Set(rows.map((r) => r.name));
}

export function computeRollup(db: Database.Database): Rollup {
  const tables = existingTables(db);
  const scalar = (table: string, sql: string): number => {
    if (!tables.has(table)) return 0;
    const row = db.prepare(sql).get() as { v: number | null };
    return row.v ?? 0;
  };
  const all = <T>(table: string, sql: string): T[] => (tables.has(table) ? (db.prepare(sql).all() as T[]) : []);
  const present = SEQUENCED_TABLES.filter((t) => tables.has(t));
  const lastTimes = present
    .map((t) => (db.prepare(`SELECT max(timestamp) AS v FROM ${t}`).get() as { v: string | null }).v)
    .filter((v): v is string => v !== null)
    .sort();
  const latestCall = tables.has('model_calls')
    ? (db.prepare('SELECT provider, process_name AS agent, net_event_id FROM model_calls ORDER BY id DESC LIMIT 1').get() as
        { provider: string; agent: string | null; net_event_id: string | null } | undefined)
    : undefined;
  const inferenceHost =
    latestCall?.net_event_id && tables.has('net_events')
      ? ((
          db
            .prepare(
              "SELECT domain || CASE WHEN port IS NULL OR port = 443 THEN '' ELSE ':' || port END AS host FROM net_events WHERE event_id = ?",
            )
            .get(latestCall.net_event_id) as { host: string } | undefined
        )?.host ?? null)
      : null;
  return {
    totals: {
      requests: scalar('net_events', 'SELECT count(*) AS v FROM net_events'),
      allowedRequests: scalar('net_events', "SELECT count(*) AS v FROM net_events WHERE decision = 'allowed'"),
      deniedRequests: scalar('net_events', "SELECT count(*) AS v FROM net_events WHERE decision = 'denied'"),
      modelCalls: scalar('model_calls', 'SELECT count(*) AS v FROM model_calls'),
      inputTokens: scalar('model_calls', 'SELECT sum(input_tokens) AS v FROM model_calls'),
      outputTokens: scalar('model_calls', 'SELECT sum(output_tokens) AS v FROM model_calls'),
      costUsd: scalar('model_calls', 'SELECT sum(estimated_cost_usd) AS v FROM model_calls'),
      toolCalls: scalar('tool_calls', 'SELECT count(*) AS v FROM tool_calls'),
      mcpCalls: scalar('tool_calls', "SELECT count(*) AS v FROM tool_calls WHERE origin = 'mcp'"),
      fileEvents: scalar('fs_events', 'SELECT count(*) AS v FROM fs_events'),
      execCount: scalar('exec_events', 'SELECT count(*) AS v FROM exec_events'),
      events: present.reduce((sum, t) => sum + scalar(t, `SELECT count(*) AS v FROM ${t}`), 0),
    },
    activity: { lastEventAt: lastTimes.at(-1) ?? null, inferenceHost, agent: latestCall?.agent ?? null },
    aiUsage: all<AiUsageRow>(
      'model_calls',
      `SELECT provider, coalesce(model, '') AS model, count(*) AS call_count,
              coalesce(sum(input_tokens), 0) AS input_tokens, coalesce(sum(output_tokens), 0) AS output_tokens,
              coalesce(sum(CASE WHEN json_valid(usage_details) THEN json_extract(usage_details, '$.cache_read') END), 0) AS cache_read_tokens,
              coalesce(sum(CASE WHEN json_valid(usage_details) THEN json_extract(usage_details, '$.cache_write') END), 0) AS cache_write_tokens,
              coalesce(sum(estimated_cost_usd), 0) AS estimated_cost, coalesce(sum(duration_ms), 0) AS total_duration_ms
       FROM model_calls GROUP BY provider, coalesce(model, '')`,
    ),
    toolUsage: all<ToolUsageRow>(
      'tool_calls',
      `SELECT tool_name, origin, count(*) AS call_count, sum(status = 'error') AS error_count,
              coalesce(sum(duration_ms), 0) AS total_duration_ms, coalesce(sum(bytes_sent), 0) AS bytes_sent,
              coalesce(sum(bytes_received), 0) AS bytes_received
       FROM tool_calls GROUP BY tool_name, origin`,
    ),
    mcpUsage: all<McpUsageRow>(
      'tool_calls',
      `SELECT coalesce(server_name, '') AS server_name, count(*) AS call_count, sum(status = 'error') AS error_count,
              coalesce(sum(duration_ms), 0) AS total_duration_ms, coalesce(sum(bytes_sent), 0) AS bytes_sent,
              coalesce(sum(bytes_received), 0) AS bytes_received
       FROM tool_calls WHERE origin = 'mcp' GROUP BY coalesce(server_name, '')`,
    ),
  };
}

/** The figures of a session as of now: live from its session.db when it is on disk. */
export function liveRollup(home: CapsemHome, id: SessionId): Rollup | null {
  const { dbPath } = sessionPaths(home, id);
  if (!existsSync(dbPath)) return null;
  const db = openSessionDbReadOnly(dbPath);
  try {
    return computeRollup(db);
  } finally {
    db.close();
  }
}

export interface EndOptions {
  readonly status: Extract<SessionStatus, 'stopped' | 'crashed' | 'terminated'>;
  readonly reason?: string | null;
  /** When the session ended; defaults to its last recorded event, else now. */
  readonly endedAt?: string;
}

/**
 * Ends a session in main.db: status, reason and the rolled-up figures. Crashed sessions are
 * rolled up too. Idempotent: a second run leaves the same rows.
 */
export function rollUpSession(home: CapsemHome, mainDb: Database.Database, id: SessionId, end: EndOptions): Rollup | null {
  const rollup = liveRollup(home, id);
  writeRollup(mainDb, id, rollup, end);
  return rollup;
}

export function writeRollup(mainDb: Database.Database, id: SessionId, rollup: Rollup | null, end: EndOptions): void {
  const endedAt = end.endedAt ?? rollup?.activity.lastEventAt ?? new Date().toISOString();
  mainDb
    .transaction(() => {
      const exists = mainDb.prepare('SELECT 1 FROM sessions WHERE id = ?').get(id);
      if (!exists) throw new Error(`session ${id} is not in main.db`);
      mainDb
        .prepare(
          `UPDATE sessions SET status = ?, status_reason = coalesce(?, status_reason), stopped_at = coalesce(stopped_at, ?),
           rolled_up_at = coalesce(rolled_up_at, ?), updated_at = coalesce(rolled_up_at, ?) WHERE id = ?`,
        )
        .run(end.status, end.reason ?? null, endedAt, endedAt, endedAt, id);
      if (!rollup) return;
      const t = rollup.totals;
      mainDb
        .prepare(
          `UPDATE sessions SET total_requests = ?, allowed_requests = ?, denied_requests = ?, total_model_calls = ?,
           total_input_tokens = ?, total_output_tokens = ?, total_estimated_cost = ?, total_tool_calls = ?,
           total_mcp_calls = ?, total_file_events = ?, exec_count = ?, event_count = ?, last_event_at = ?,
           inference_host = ?, agent = ? WHERE id = ?`,
        )
        .run(
          t.requests,
          t.allowedRequests,
          t.deniedRequests,
          t.modelCalls,
          t.inputTokens,
          t.outputTokens,
          t.costUsd,
          t.toolCalls,
          t.mcpCalls,
          t.fileEvents,
          t.execCount,
          t.events,
          rollup.activity.lastEventAt,
          rollup.activity.inferenceHost,
          rollup.activity.agent,
          id,
        );
      for (const table of ['ai_usage', 'tool_usage', 'mcp_usage']) mainDb.prepare(`DELETE FROM ${table} WHERE session_id = ?`).run(id);
      const ai = mainDb.prepare(
        `INSERT INTO ai_usage (session_id, provider, model, call_count, input_tokens, output_tokens, cache_read_tokens,
         cache_write_tokens, estimated_cost, total_duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const r of rollup.aiUsage)
        ai.run(
          id,
          r.provider,
          r.model,
          r.call_count,
          r.input_tokens,
          r.output_tokens,
          r.cache_read_tokens,
          r.cache_write_tokens,
          r.estimated_cost,
          r.total_duration_ms,
        );
      const tool = mainDb.prepare(
        `INSERT INTO tool_usage (session_id, tool_name, origin, call_count, error_count, total_duration_ms, bytes_sent, bytes_received)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const r of rollup.toolUsage)
        tool.run(id, r.tool_name, r.origin, r.call_count, r.error_count, r.total_duration_ms, r.bytes_sent, r.bytes_received);
      const mcp = mainDb.prepare(
        `INSERT INTO mcp_usage (session_id, server_name, call_count, error_count, total_duration_ms, bytes_sent, bytes_received)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const r of rollup.mcpUsage)
        mcp.run(id, r.server_name, r.call_count, r.error_count, r.total_duration_ms, r.bytes_sent, r.bytes_received);
    })
    .immediate();
}
