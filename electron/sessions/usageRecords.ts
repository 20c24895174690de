import type Database from 'better-sqlite3';
import type { SessionId } from '../contract/ids.ts';
import { allSessions, type SessionRecord } from '../store/registry.ts';
import type { AiUsageRow } from '../store/rollup.ts';
import { hostOf } from '../telemetry/hosts.ts';
import { lenientJson } from '../telemetry/json.ts';
import { SessionNotOnDiskError, type OpenSession, type SessionStores } from './sessionStores.ts';

// The records behind GET /v1/usage. A session whose session.db is on disk gives one record per
// request, at the time it was made, from its net_events and model_calls. A session whose
// session.db is gone gives main.db's ledger instead: its ai_usage rows, one per model, placed at
// the session's end because the ledger keeps no per-call times. Tunnels are left out, as Cortex
// leaves them out: a tunnel's lifetime is not a request's latency.

/** One request, or (from main.db's ledger) one session's calls to one model, with its labels. */
export interface UsageRecord {
  readonly at: number;
  readonly session: string;
  readonly requests: number;
  readonly errors: number;
  readonly tokens: number;
  readonly costMicros: number;
  readonly pricedRequests: number;
  readonly priceableRequests: number;
  /** A single request's duration; absent for ledger rows, which carry no samples. */
  readonly durationMs?: number;
  readonly model?: string;
  readonly endpoint?: string;
  readonly host?: string;
  readonly agent?: string;
  readonly status?: string;
}

export interface NetRow {
  event_id: string;
  timestamp: string;
  domain: string;
  port: number | null;
  conn_type: string | null;
  decision: string;
  status_code: number | null;
  duration_ms: number | null;
  process_name: string | null;
  error_kind: string | null;
}

export interface CallRow {
  net_event_id: string | null;
  timestamp: string;
  host: string | null;
  provider: string;
  model: string | null;
  process_name: string | null;
  status_code: number | null;
  duration_ms: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
  usage_details: string | null;
  estimated_cost_usd: number | null;
}

function cacheTokens(details: string | null): { read: number; write: number } {
  const parsed = details ? lenientJson(details) : undefined;
  const obj = parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  return { read: n(obj.cache_read), write: n(obj.cache_write) };
}

interface Inference {
  readonly model?: string;
  readonly tokens: number;
  readonly costMicros: number;
  readonly priced: number;
  readonly priceable: number;
}

/**
 * Priceable: a model and tokens. Priced as recorded: the recorder priced the call when it stored a
 * cost above zero. A zero with tokens is a local model, a provider with no price or a model the
 * pricing data lacks (usage_details' pricing mark and `capsem check` say which): its cost is
 * unavailable, never $0.00, and the pricing data of today does not reprice an old session.
 */
function inferenceOf(model: string | undefined, tokens: number, costUsd: number, calls: number): Inference {
  const priceable = model !== undefined && tokens > 0 ? calls : 0;
  const priced = priceable > 0 && costUsd > 0 ? calls : 0;
  return { model, tokens, costMicros: priced ? Math.round(costUsd * 1e6) : 0, priced, priceable };
}

function callInference(call: CallRow): Inference {
  const cache = cacheTokens(call.usage_details);
  const tokens = (call.input_tokens ?? 0) + cache.read + cache.write + (call.output_tokens ?? 0);
  return inferenceOf(call.model || undefined, tokens, call.estimated_cost_usd ?? 0, 1);
}

function statusLabel(status: number | null, denied: boolean): string | undefined {
  if (status !== null) return String(status);
  return denied ? 'denied' : undefined;
}

function record(session: string, at: string, fields: Omit<UsageRecord, 'at' | 'session' | 'requests'>): UsageRecord | null {
  const ms = Date.parse(at);
  return Number.isNaN(ms) ? null : { at: ms, session, requests: 1, ...fields };
}

/** A session's requests as usage records: each exchange once, with the model call it carried, if any. */
export function requestRecords(session: string, nets: readonly NetRow[], calls: readonly CallRow[]): UsageRecord[] {
  const byNet = new Map<string, CallRow[]>();
  const loose: CallRow[] = [];
  const netIds = new Set(nets.map((n) => n.event_id));
  for (const call of calls) {
    if (call.net_event_id !== null && netIds.has(call.net_event_id))
      byNet.set(call.net_event_id, [...(byNet.get(call.net_event_id) ?? []), call]);
    else loose.push(call);
  }
  const out: UsageRecord[] = [];
  for (const net of nets) {
    if (net.conn_type === 'tunnel') continue;
    const host = hostOf(net.domain, net.port ?? undefined, net.conn_type ?? undefined);
    const denied = net.decision === 'denied';
    const errors = denied || (net.status_code ?? 0) >= 400 || net.error_kind !== null ? 1 : 0;
    const status = statusLabel(net.status_code, denied);
    // A WebSocket carries many turns on one exchange: each is a request, as Cortex counts them.
    for (const call of byNet.get(net.event_id) ?? [null]) {
      const inf = call ? callInference(call) : undefined;
      const r = record(session, call?.timestamp ?? net.timestamp, {
        errors,
        tokens: inf?.tokens ?? 0,
        costMicros: inf?.costMicros ?? 0,
        pricedRequests: inf?.priced ?? 0,
        priceableRequests: inf?.priceable ?? 0,
        durationMs: call?.duration_ms ?? net.duration_ms ?? undefined,
        model: inf?.model,
        endpoint: call ? host : undefined,
        host,
        agent: call?.process_name ?? net.process_name ?? undefined,
        status,
      });
      if (r) out.push(r);
    }
  }
  for (const call of loose) {
    const inf = callInference(call);
    const r = record(session, call.timestamp, {
      errors: (call.status_code ?? 0) >= 400 ? 1 : 0,
      tokens: inf.tokens,
      costMicros: inf.costMicros,
      pricedRequests: inf.priced,
      priceableRequests: inf.priceable,
      durationMs: call.duration_ms ?? undefined,
      model: inf.model,
      endpoint: call.host ?? undefined,
      host: call.host ?? undefined,
      agent: call.process_name ?? undefined,
      status: statusLabel(call.status_code, false),
    });
    if (r) out.push(r);
  }
  return out;
}

/** A gone session's ledger rows, at the session's end: all the ledger can say of when they happened. */
export function ledgerRecords(session: SessionRecord, rows: readonly AiUsageRow[]): UsageRecord[] {
  const at = Date.parse(session.stoppedAt ?? session.activity.lastEventAt ?? session.updatedAt);
  if (Number.isNaN(at)) return [];
  const host = session.activity.inferenceHost ?? undefined;
  return rows.map((row) => {
    const tokens = row.input_tokens + row.cache_read_tokens + row.cache_write_tokens + row.output_tokens;
    const inf = inferenceOf(row.model || undefined, tokens, row.estimated_cost, row.call_count);
    return {
      at,
      session: session.id,
      requests: row.call_count,
      errors: 0,
      tokens,
      costMicros: inf.costMicros,
      pricedRequests: inf.priced,
      priceableRequests: inf.priceable,
      model: inf.model,
      endpoint: host,
      host,
      agent: session.activity.agent ?? undefined,
    };
  });
}

function onDisk(stores: SessionStores, id: SessionId): OpenSession | null {
  try {
    return stores.get(id);
  } catch (err) {
    if (err instanceof SessionNotOnDiskError) return null;
    throw err;
  }
}

/** The records of an on-disk session from `since` (ISO time) on. */
export function readRequestRecords(open: OpenSession, session: string, since: string): UsageRecord[] {
  const tables = open.tables();
  const db: Database.Database = open.store.db;
  const nets = tables.has('net_events')
    ? (db
        .prepare(
          `SELECT event_id, timestamp, domain, port, conn_type, decision, status_code, duration_ms, process_name, error_kind FROM net_events WHERE timestamp >= ?`,
        )
        .all(since) as NetRow[])
    : [];
  const calls = tables.has('model_calls')
    ? (db
        .prepare(
          `SELECT net_event_id, timestamp, host, provider, model, process_name, status_code, duration_ms, input_tokens, output_tokens, usage_details, estimated_cost_usd FROM model_calls WHERE timestamp >= ?`,
        )
        .all(since) as CallRow[])
    : [];
  return requestRecords(session, nets, calls);
}

/** main.db's ledger rows for one session. */
export function readLedgerRows(mainDb: Database.Database, session: string): AiUsageRow[] {
  return mainDb
    .prepare(
      'SELECT provider, model, call_count, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, estimated_cost, total_duration_ms FROM ai_usage WHERE session_id = ?',
    )
    .all(session) as AiUsageRow[];
}

/**
 * Every usage record that can fall at or after `since` (ms): sessions whose activity reaches into
 * the window, read from their session.db where it is on disk, else from main.db's ledger. A
 * failed read throws: an answer missing part of the spend would understate it.
 */
export function collectUsageRecords(mainDb: Database.Database, stores: SessionStores, since: number, only?: string): UsageRecord[] {
  const sinceIso = new Date(since).toISOString();
  const out: UsageRecord[] = [];
  for (const session of allSessions(mainDb)) {
    if (only !== undefined && session.id !== only) continue;
    const lastActive =
      session.status === 'running'
        ? Number.POSITIVE_INFINITY
        : Date.parse(session.stoppedAt ?? session.activity.lastEventAt ?? session.updatedAt);
    if (lastActive < since) continue;
    const open = onDisk(stores, session.id);
    out.push(...(open ? readRequestRecords(open, session.id, sinceIso) : ledgerRecords(session, readLedgerRows(mainDb, session.id))));
  }
  return out;
}
