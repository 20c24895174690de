import type Database from 'better-sqlite3';
import type { SessionEvent } from '../contract/sessionEvent.ts';
import { existingTables } from '../store/rollup.ts';
import { openSessionDbReadOnly } from '../store/sessionDb.ts';
import { SEQUENCED_TABLES, type SequencedTable } from '../store/sessionSchema.ts';
import { parseMcpExchange, type McpMessage } from '../telemetry/mcp.ts';
import { dnsEvent, fileEvent, httpEvent, modelEvent, rawCapture, toolCallEvent, toolResultEvent, type Row } from './eventBuilders.ts';
import { finalSeqOf, rowSlotOf, wireSeqOf, type EventPhaseSlot } from './eventSeq.ts';
import { writtenByAnotherTool } from './foreignDatabases.ts';
import { columnsOf } from '../store/tableColumns.ts';

// Reads one session.db as a sequence of events ordered by seq. Every sequenced table is one
// kind of event; a page is a merge of their seq indexes, and each event is built on its own, so
// memory follows one event, not the page.

export interface EventRef {
  /** The event's wire seq. */
  readonly seq: number;
  /** The seq of the row it is built from; an exchange's row holds two events. */
  readonly rowSeq: number;
  readonly slot: EventPhaseSlot;
  readonly table: SequencedTable;
  readonly id: number;
}

export interface EventOptions {
  /** false for the summary view: the large request-derived lists are never built. */
  readonly full: boolean;
  readonly raw?: boolean;
}

/** A model call's exchange row is written just before it, so the seq index finds it. */
const fromExchange = (column: string): string =>
  `(SELECT n.${column} FROM net_events n WHERE n.seq = model_calls.seq - 1 AND n.event_id = model_calls.net_event_id) AS ${column}`;
const credentialOutcomes = (eventId: string): string =>
  `(SELECT group_concat(s.outcome) FROM substitution_events s WHERE s.net_event_id = ${eventId}) AS credential_outcomes`;

const IDENTITY = 'id, seq, event_id, trace_id, turn_id, timestamp';
const MODEL_CALL_SEQ = '(SELECT m.seq FROM model_calls m WHERE m.id = model_call_id) AS model_call_seq';

/** On net_events: the recorder wrote a model call for this exchange, right after it. */
export const TOLD_BY_MODEL_CALL =
  'EXISTS (SELECT 1 FROM model_calls m WHERE m.seq = net_events.seq + 1 AND m.net_event_id = net_events.event_id)';

/**
 * On net_events: the recorder read this exchange as MCP. A tools/call is a tool_calls row of origin
 * mcp written right after it; any other JSON-RPC message a security_rule_events row under its id.
 */
export const TOLD_AS_MCP = `(EXISTS (SELECT 1 FROM tool_calls c WHERE c.seq = net_events.seq + 1 AND c.origin = 'mcp') OR EXISTS (SELECT 1 FROM security_rule_events s WHERE s.event_id = net_events.event_id AND s.event_type LIKE 'mcp.%'))`;

/** The exchange columns the agent-story step adds (session.db version 7); a file from before has none. */
export const AGENT_ID_COLUMNS = ['agent_id', 'parent_agent_id'] as const;

/**
 * `columns` of `table` as a SELECT reads them from this file: each one the file lacks (it was
 * recorded before the column was) read as NULL under its own name; null while the table itself is
 * not there yet (a writer that just created the file has not made it).
 */
export function columnsOrNull(db: Database.Database, table: string, columns: readonly string[]): string[] | null {
  const have = columnsOf(db, table);
  return have.size === 0 ? null : columns.map((c) => (have.has(c) ? c : `NULL AS ${c}`));
}

const eventColumns = (agentIds: readonly string[]): Record<SequencedTable, string> => ({
  net_events: `${IDENTITY}, domain, port, decision, process_name, pid, method, path, query, status_code, bytes_sent, bytes_received, duration_ms, ttfb_ms, matched_rule, conn_type, error_kind, error_message, request_headers, response_headers, request_body_preview, ${agentIds.join(', ')}, ${credentialOutcomes('net_events.event_id')}, ${TOLD_AS_MCP} AS told_as_mcp`,
  model_calls: `${IDENTITY}, net_event_id, host, provider, wire, model, process_name, pid, method, path, stream, messages_count, tools_count, request_bytes, message_id, status_code, text_content, thinking_content, stop_reason, input_tokens, output_tokens, duration_ms, response_bytes, estimated_cost_usd, usage_details, ${['ttfb_ms', 'error_kind', 'error_message', 'request_headers', 'decision', 'matched_rule'].map(fromExchange).join(', ')}, ${agentIds.map((c) => (c.startsWith('NULL') ? c : fromExchange(c))).join(', ')}, ${credentialOutcomes('model_calls.net_event_id')}`,
  tool_calls: `${IDENTITY}, model_call_id, status, call_id, tool_name, arguments, response_preview, origin, decision, duration_ms, error_message, process_name, policy_rule, ${MODEL_CALL_SEQ}`,
  tool_responses: `${IDENTITY}, model_call_id, call_id, content_preview, is_error, ${MODEL_CALL_SEQ}`,
  fs_events: `${IDENTITY}, action, path, size`,
  dns_events: `${IDENTITY}, name, type, rcode, answers, resolved, decision, matched_rule, process_name, pid, duration_ms, error_message`,
});

/** On net_events: the seq of the row whose events tell this exchange (its model call's, else its own). */
export const EXCHANGE_EVENT_ROW_SEQ = `CASE WHEN ${TOLD_BY_MODEL_CALL} THEN net_events.seq + 1 ELSE net_events.seq END`;

/** On tool_calls: an MCP call has no event of its own; its exchange, written just before it, tells it. */
export const MCP_CALL_EXCHANGE_SEQ =
  "CASE WHEN tool_calls.origin = 'mcp' THEN (SELECT max(n.seq) FROM net_events n WHERE n.seq < tool_calls.seq) END";

/**
 * Which rows are events, and which slots each fills. An exchange is two events (request, then
 * response or denial); a model call's exchange is told by its model_calls row, which knows the
 * conversation, and an MCP call by its exchange, which holds the JSON-RPC messages whole.
 */
const EVENT_ROWS: Record<SequencedTable, { readonly where: string; readonly slots: readonly EventPhaseSlot[] }> = {
  net_events: { where: `NOT ${TOLD_BY_MODEL_CALL}`, slots: ['request', 'final'] },
  model_calls: { where: '1', slots: ['request', 'final'] },
  tool_calls: { where: "origin IS NOT 'mcp'", slots: ['final'] },
  tool_responses: { where: '1', slots: ['final'] },
  fs_events: { where: '1', slots: ['final'] },
  dns_events: { where: '1', slots: ['final'] },
};

const unionOfRows = (where: string): string =>
  SEQUENCED_TABLES.map((t) => `SELECT seq, '${t}' AS t, id FROM ${t} WHERE (${EVENT_ROWS[t].where}) AND ${where}`).join(' UNION ALL ');

/**
 * In a file another tool wrote, a JSON body naming a method or JSON-RPC early (every MCP SDK writes
 * one of the two first) may be an MCP call: only those have their bodies read to find out.
 */
const mayBeJsonRpc = (preview: unknown): boolean =>
  typeof preview === 'string' && /^\s*[[{]/.test(preview) && /"(jsonrpc|method)"\s*:/.test(preview);

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
  private columns: Record<SequencedTable, string> | null = null;

  private constructor(
    readonly sessionId: string,
    readonly db: Database.Database,
  ) {}

  /** What each kind of row's events are built from, as far as the file has it. */
  private get eventColumns(): Record<SequencedTable, string> {
    if (this.columns) return this.columns;
    const agentIds = columnsOrNull(this.db, 'net_events', AGENT_ID_COLUMNS);
    const columns = eventColumns(agentIds ?? AGENT_ID_COLUMNS.map((c) => `NULL AS ${c}`));
    if (agentIds) this.columns = columns;
    return columns;
  }

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

  /** The newest row seq (the app's tables count rows). */
  newestSeq(): number {
    return SEQUENCED_TABLES.reduce(
      (max, t) => Math.max(max, (this.stmt(`SELECT max(seq) AS m FROM ${t}`).get() as { m: number | null }).m ?? 0),
      0,
    );
  }

  /** The newest wire seq the session's rows hold: no event of theirs is above it. */
  newestEventSeq(): number {
    return finalSeqOf(this.newestSeq());
  }

  /** How many events the session holds, and its oldest and newest wire seqs. */
  bounds(): { total: number; oldest: number; newest: number } {
    let total = 0;
    let oldest = Infinity;
    let newest = 0;
    for (const t of SEQUENCED_TABLES) {
      const { where, slots } = EVENT_ROWS[t];
      const row = this.stmt(`SELECT count(*) AS n, min(seq) AS lo, max(seq) AS hi FROM ${t} WHERE ${where}`).get() as {
        n: number;
        lo: number | null;
        hi: number | null;
      };
      total += row.n * slots.length;
      if (row.lo !== null) oldest = Math.min(oldest, wireSeqOf(row.lo, slots[0]!));
      if (row.hi !== null) newest = Math.max(newest, finalSeqOf(row.hi));
    }
    return { total, oldest: oldest === Infinity ? 0 : oldest, newest };
  }

  /** The events of the rows `sql` selects, in row order, each row's request before the rest. */
  private refs(sql: string, ...params: number[]): EventRef[] {
    return (this.stmt(sql).all(...params) as { seq: number; t: SequencedTable; id: number }[]).flatMap((r) =>
      EVENT_ROWS[r.t].slots.map((slot) => ({ seq: wireSeqOf(r.seq, slot), rowSeq: r.seq, slot, table: r.t, id: r.id })),
    );
  }

  /**
   * The `limit` events just below `before` (or the newest), oldest first. One more row than
   * events is read: the row holding `before` itself may give only its request.
   */
  page(before: number | undefined, limit: number): EventRef[] {
    const rowBound = before === undefined ? Number.MAX_SAFE_INTEGER : Math.floor(before / 2);
    const refs = this.refs(`${unionOfRows('seq <= ?')} ORDER BY seq DESC LIMIT ?`, ...SEQUENCED_TABLES.map(() => rowBound), limit + 1);
    return refs
      .sort((a, b) => a.seq - b.seq)
      .filter((r) => before === undefined || r.seq < before)
      .slice(-limit);
  }

  /** Events after `seq`, oldest first, at most `limit`. */
  after(seq: number, limit: number): EventRef[] {
    return this.refs(`${unionOfRows('seq > ?')} ORDER BY seq ASC LIMIT ?`, ...SEQUENCED_TABLES.map(() => Math.floor(seq / 2)), limit + 1)
      .filter((r) => r.seq > seq)
      .slice(0, limit);
  }

  at(seq: number): EventRef | undefined {
    return this.refs(unionOfRows('seq = ?'), ...SEQUENCED_TABLES.map(() => rowSlotOf(seq).rowSeq)).find((r) => r.seq === seq);
  }

  /**
   * The rows behind a run of refs, fetched a table at a time over their seq range, with only the
   * columns events are built from (bodies, previews and headers stay behind) and the seq of the
   * model call a tool row belongs to.
   */
  rows(refs: readonly EventRef[]): Map<number, Row> {
    const out = new Map<number, Row>();
    if (refs.length === 0) return out;
    const lo = refs[0]!.rowSeq;
    const hi = refs.at(-1)!.rowSeq;
    for (const table of new Set(refs.map((r) => r.table))) {
      for (const row of this.stmt(`SELECT ${this.eventColumns[table]} FROM ${table} WHERE seq >= ? AND seq <= ?`).all(lo, hi) as Row[])
        out.set(row.seq as number, row);
    }
    return out;
  }

  row(ref: EventRef): Row {
    return this.stmt(`SELECT ${this.eventColumns[ref.table]} FROM ${ref.table} WHERE id = ?`).get(ref.id) as Row;
  }

  private modelCallSeq(row: Row): number | undefined {
    if (typeof row.model_call_seq === 'number') return row.model_call_seq;
    const id = row.model_call_id;
    if (typeof id !== 'number') return undefined;
    return (this.stmt('SELECT seq FROM model_calls WHERE id = ?').get(id) as { seq: number } | undefined)?.seq;
  }

  toolCallsOf(modelCallId: unknown): Row[] {
    return this.stmt('SELECT call_id, tool_name, arguments FROM tool_calls WHERE model_call_id = ? ORDER BY call_index').all(
      modelCallId,
    ) as Row[];
  }

  /** The captured bodies of an exchange: a model call's are stored under its HTTP exchange's event_id. */
  blobs(eventId: string): Row[] {
    return this.stmt(
      'SELECT direction, body, truncated, original_bytes, content_type FROM event_body_blobs WHERE event_id = ? ORDER BY direction',
    ).all(eventId) as Row[];
  }

  bodyBytes(eventId: string, direction: string): Uint8Array | undefined {
    const row = this.stmt('SELECT body FROM event_body_blobs WHERE event_id = ? AND direction = ? LIMIT 1').get(eventId, direction) as
      { body: Uint8Array | null } | undefined;
    return row?.body ?? undefined;
  }

  requestBody(eventId: string): unknown {
    return parseBody(this.bodyBytes(eventId, 'request'));
  }

  /** Whether the file's rows lack what this app's recorder writes (foreignDatabases.ts); asked once. */
  private foreign: boolean | undefined;

  /**
   * The JSON-RPC call an exchange carried, read from its captured bodies: for an exchange the
   * recorder read as MCP, or in a file another tool wrote, one whose body looks like JSON-RPC.
   */
  private mcpMessage(row: Row): McpMessage | undefined {
    if (!row.told_as_mcp) {
      this.foreign ??= writtenByAnotherTool(this.db, existingTables(this.db));
      if (!this.foreign || !mayBeJsonRpc(row.request_body_preview)) return undefined;
    }
    const eventId = String(row.event_id);
    const response = this.stmt("SELECT body, content_type FROM event_body_blobs WHERE event_id = ? AND direction = 'response' LIMIT 1").get(
      eventId,
    ) as { body: Uint8Array | null; content_type: string | null } | undefined;
    return parseMcpExchange(this.requestBody(eventId), response?.content_type ?? undefined, response?.body ?? new Uint8Array())[0];
  }

  event(ref: EventRef, options: EventOptions, row: Row = this.row(ref)): SessionEvent {
    const id = this.sessionId;
    switch (ref.table) {
      case 'net_events': {
        const event = httpEvent(id, row, ref.slot, this.mcpMessage(row), options.full);
        if (options.raw) event.raw = rawCapture(row, this.blobs(String(row.event_id)), ref.slot);
        return event;
      }
      case 'model_calls': {
        const exchange = typeof row.net_event_id === 'string' ? row.net_event_id : String(row.event_id);
        const full = options.full;
        const request = ref.slot === 'request';
        const event = modelEvent(
          id,
          row,
          {
            full,
            requestBody: full && request ? this.requestBody(exchange) : undefined,
            toolCalls: full && !request ? this.toolCallsOf(row.id) : [],
            toolResults:
              full && request
                ? (this.stmt('SELECT call_id, content_preview, is_error FROM tool_responses WHERE model_call_id = ? ORDER BY id').all(
                    row.id,
                  ) as Row[])
                : [],
          },
          ref.slot,
        );
        if (options.raw) {
          const netRow = this.stmt('SELECT * FROM net_events WHERE seq = ? AND event_id = ?').get(ref.rowSeq - 1, exchange) as
            Row | undefined;
          event.raw = rawCapture(netRow, this.blobs(exchange), ref.slot);
        }
        return event;
      }
      case 'tool_calls':
        return toolCallEvent(id, row, { modelCallSeq: this.modelCallSeq(row) });
      case 'tool_responses':
        return toolResultEvent(id, row, { modelCallSeq: this.modelCallSeq(row) });
      case 'fs_events':
        return fileEvent(id, row);
      case 'dns_events':
        return dnsEvent(id, row);
      default:
        throw new Error(`table ${String(ref.table)} holds no events`);
    }
  }
}
