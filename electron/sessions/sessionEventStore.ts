import type Database from 'better-sqlite3';
import type { SessionEvent } from '../contract/sessionEvent.ts';
import { openSessionDbReadOnly } from '../store/sessionDb.ts';
import { SEQUENCED_TABLES, type SequencedTable } from '../store/sessionSchema.ts';
import { dnsEvent, fileEvent, httpEvent, modelEvent, rawCapture, toolCallEvent, toolResultEvent, type Row } from './eventBuilders.ts';

// Reads one session.db as a sequence of events ordered by seq. Every sequenced table is one
// kind of event; a page is a merge of their seq indexes, and each event is built on its own, so
// memory follows one event, not the page.


export interface EventRef {
  readonly seq: number;
  readonly table: SequencedTable;
  readonly id: number;
}

export interface EventOptions {
  /** false for the summary view: the large request-derived lists are never built. */
  readonly full: boolean;
  readonly raw?: boolean;
}

const IDENTITY = 'id, seq, event_id, trace_id, turn_id, timestamp';
const MODEL_CALL_SEQ = '(SELECT m.seq FROM model_calls m WHERE m.id = model_call_id) AS model_call_seq';
const EVENT_COLUMNS: Record<SequencedTable, string> = {
  net_events: `${IDENTITY}, domain, port, decision, process_name, pid, method, path, status_code, bytes_sent, bytes_received, duration_ms, ttfb_ms, matched_rule, conn_type, error_kind, error_message`,
  model_calls: `${IDENTITY}, net_event_id, host, provider, model, process_name, pid, method, path, stream, messages_count, tools_count, request_bytes, message_id, status_code, text_content, thinking_content, stop_reason, input_tokens, output_tokens, duration_ms, response_bytes, estimated_cost_usd, usage_details`,
  tool_calls: `${IDENTITY}, model_call_id, status, call_id, tool_name, arguments, response_preview, origin, server_name, method, request_id, decision, duration_ms, error_message, process_name, bytes_sent, bytes_received, policy_rule, ${MODEL_CALL_SEQ}`,
  tool_responses: `${IDENTITY}, model_call_id, call_id, content_preview, is_error, ${MODEL_CALL_SEQ}`,
  fs_events: `${IDENTITY}, action, path, size`,
  dns_events: `${IDENTITY}, name, type, rcode, answers, resolved, decision, matched_rule, process_name, pid, duration_ms, error_message`,
};

const unionOfSeqs = (where: string): string =>
  SEQUENCED_TABLES.map((t) => `SELECT seq, '${t}' AS t, id FROM ${t} WHERE ${where}`).join(' UNION ALL ');

function parseBody(body: unknown): unknown {
  if (!(body instanceof Uint8Array)) return undefined;
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    return undefined;
  }
}

export class SessionEventStore {
  private readonly statements = new Map<string, Database.Statement>();

  private constructor(
    readonly sessionId: string,
    readonly db: Database.Database,
  ) {}

  static open(sessionId: string, dbPath: string): SessionEventStore {
    return new SessionEventStore(sessionId, openSessionDbReadOnly(dbPath));
  }

  close(): void {
    this.db.close();
  }

  private stmt(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /** Changes whenever another connection commits; a cheap "is there anything new" probe. */
  dataVersion(): number {
    return this.db.pragma('data_version', { simple: true }) as number;
  }

  newestSeq(): number {
    return SEQUENCED_TABLES.reduce((max, t) => Math.max(max, (this.stmt(`SELECT max(seq) AS m FROM ${t}`).get() as { m: number | null }).m ?? 0), 0);
  }

  bounds(): { total: number; oldest: number; newest: number } {
    let total = 0;
    let oldest = Infinity;
    let newest = 0;
    for (const t of SEQUENCED_TABLES) {
      const row = this.stmt(`SELECT count(*) AS n, min(seq) AS lo, max(seq) AS hi FROM ${t}`).get() as { n: number; lo: number | null; hi: number | null };
      total += row.n;
      if (row.lo !== null) oldest = Math.min(oldest, row.lo);
      if (row.hi !== null) newest = Math.max(newest, row.hi);
    }
    return { total, oldest: oldest === Infinity ? 0 : oldest, newest };
  }

  private refs(sql: string, ...params: number[]): EventRef[] {
    return (this.stmt(sql).all(...params) as { seq: number; t: SequencedTable; id: number }[]).map((r) => ({ seq: r.seq, table: r.t, id: r.id }));
  }

  /** The `limit` events just below `before` (or the newest), oldest first. */
  page(before: number | undefined, limit: number): EventRef[] {
    const refs = this.refs(`${unionOfSeqs('seq < ?')} ORDER BY seq DESC LIMIT ?`, ...SEQUENCED_TABLES.map(() => before ?? Number.MAX_SAFE_INTEGER), limit);
    return refs.reverse();
  }

  /** Events after `seq`, oldest first, at most `limit`. */
  after(seq: number, limit: number): EventRef[] {
    return this.refs(`${unionOfSeqs('seq > ?')} ORDER BY seq ASC LIMIT ?`, ...SEQUENCED_TABLES.map(() => seq), limit);
  }

  at(seq: number): EventRef | undefined {
    return this.refs(unionOfSeqs('seq = ?'), ...SEQUENCED_TABLES.map(() => seq))[0];
  }

  /**
   * The rows behind a run of refs, fetched a table at a time over their seq range, with only the
   * columns events are built from (bodies, previews and headers stay behind) and the seq of the
   * model call a tool row belongs to.
   */
  rows(refs: readonly EventRef[]): Map<number, Row> {
    const out = new Map<number, Row>();
    if (refs.length === 0) return out;
    const lo = refs[0]!.seq;
    const hi = refs.at(-1)!.seq;
    for (const table of new Set(refs.map((r) => r.table))) {
      for (const row of this.stmt(`SELECT ${EVENT_COLUMNS[table]} FROM ${table} WHERE seq >= ? AND seq <= ?`).all(lo, hi) as Row[]) out.set(row.seq as number, row);
    }
    return out;
  }

  row(ref: EventRef): Row {
    return this.stmt(`SELECT * FROM ${ref.table} WHERE id = ?`).get(ref.id) as Row;
  }

  private modelCallSeq(row: Row): number | undefined {
    if (typeof row.model_call_seq === 'number') return row.model_call_seq;
    const id = row.model_call_id;
    if (typeof id !== 'number') return undefined;
    return (this.stmt('SELECT seq FROM model_calls WHERE id = ?').get(id) as { seq: number } | undefined)?.seq;
  }

  toolCallsOf(modelCallId: unknown): Row[] {
    return this.stmt('SELECT call_id, tool_name, arguments FROM tool_calls WHERE model_call_id = ? ORDER BY call_index').all(modelCallId) as Row[];
  }

  /** The captured bodies of an exchange: a model call's are stored under its HTTP exchange's event_id. */
  blobs(eventId: string): Row[] {
    return this.stmt('SELECT direction, body, truncated, original_bytes, content_type FROM event_body_blobs WHERE event_id = ? ORDER BY direction').all(eventId) as Row[];
  }

  bodyBytes(eventId: string, direction: string): Uint8Array | undefined {
    const row = this.stmt('SELECT body FROM event_body_blobs WHERE event_id = ? AND direction = ? LIMIT 1').get(eventId, direction) as { body: Uint8Array | null } | undefined;
    return row?.body ?? undefined;
  }

  requestBody(eventId: string): unknown {
    return parseBody(this.bodyBytes(eventId, 'request'));
  }

  event(ref: EventRef, options: EventOptions, row: Row = this.row(ref)): SessionEvent {
    const id = this.sessionId;
    let event: SessionEvent;
    switch (ref.table) {
      case 'net_events':
        event = httpEvent(id, row);
        if (options.raw) {
          const raw = rawCapture(row, this.blobs(String(row.event_id)));
          if (raw) event.raw = raw;
        }
        return event;
      case 'model_calls': {
        const exchange = typeof row.net_event_id === 'string' ? row.net_event_id : String(row.event_id);
        event = modelEvent(id, row, {
          requestBody: options.full ? (this.requestBody(exchange) ?? {}) : undefined,
          toolCalls: options.full ? this.toolCallsOf(row.id) : [],
          toolResults: options.full ? (this.stmt('SELECT call_id, content_preview, is_error FROM tool_responses WHERE model_call_id = ? ORDER BY id').all(row.id) as Row[]) : [],
        });
        if (options.raw) {
          const raw = rawCapture(undefined, this.blobs(exchange));
          if (raw) event.raw = raw;
        }
        return event;
      }
      case 'tool_calls':
        return toolCallEvent(id, row, { full: options.full, modelCallSeq: this.modelCallSeq(row) });
      case 'tool_responses':
        return toolResultEvent(id, row, { full: options.full, modelCallSeq: this.modelCallSeq(row) });
      case 'fs_events':
        return fileEvent(id, row);
      case 'dns_events':
        return dnsEvent(id, row);
      default:
        throw new Error(`table ${String(ref.table)} holds no events`);
    }
  }

}
