import { existingTables } from '../store/rollup.ts';
import { AGENT_ID_HEADER } from '../telemetry/claudeCode.ts';
import { hostOf } from '../telemetry/hosts.ts';
import { int, text } from './eventBuilders.ts';
import { clientOfUserAgent } from './eventClient.ts';
import { finalSeqOf, requestSeqOf } from './eventSeq.ts';
import { exchangeKindOfPath, writtenByAnotherTool } from './foreignDatabases.ts';
import { AGENT_ID_COLUMNS, columnsOrNull, type SessionEventStore } from './sessionEventStore.ts';
import { buildTimeline, type ExchangeFact, type MarkFact, type ToolFact } from './timelineRules.ts';

// The session as spans on one time axis (spec: GET /v1/sessions/{id}/timeline), read from what was
// recorded and never from a body: each exchange with the agent-id headers, the client and the
// side-call kind the recorder kept on its row (agent-story step), the model call it wrote for it,
// the tool calls, and the story marks its bodies held. The rules that make agents, turns, tools,
// jobs, returns and hosts of them are timelineRules.ts. A host row's kind is what its recorded
// rows say: a tunnel by its conn_type, a model call by its model_calls row (or the trace of one
// that got no answer), an MCP call by its MCP rows.

export const TIMELINE_MAX_EVENTS = 50_000;

export interface Span {
  start: string;
  end?: string;
  seq: number;
}
export interface Agent {
  id: string;
  /** The agent that spawned it; absent on `main`. */
  parent?: string;
  label: string;
  /** The subagent type the spawning Agent/Task call asked for (Explore, general-purpose, …). */
  type?: string;
  /** The id of the Agent/Task tool call that spawned it. */
  spawnTool?: string;
  spawnedAt?: string;
  returnedAt?: string;
}
export interface Turn extends Span {
  agent: string;
  finish?: string;
  model?: string;
  error?: true;
  resent?: true;
}
/** A background shell command: from the tool result that acknowledged it to the notification of its end. */
export interface JobSpan extends Span {
  agent: string;
  id: string;
}
/** A subagent's result reaching another agent. */
export interface ReturnMark {
  agent: string;
  into: string;
  at: string;
  seq: number;
}
export interface ToolSpan extends Span {
  agent: string;
  id: string;
  name: string;
  preview?: string;
  lost?: true;
}
export interface HostSpan extends Span {
  host: string;
  kind: 'llm' | 'mcp' | 'http' | 'tunnel';
  status?: number;
  denied?: true;
}

export interface Timeline {
  id: string;
  lastSeq: number;
  start?: string;
  end?: string;
  truncated?: true;
  agents: Agent[];
  turns: Turn[];
  jobs: JobSpan[];
  tools: ToolSpan[];
  returns: ReturnMark[];
  hosts: HostSpan[];
}

/** Up to 80 characters of what the tool was asked to do: its command, path or description. */
export function toolPreview(argumentsJson: unknown): string | undefined {
  if (typeof argumentsJson !== 'string') return undefined;
  let args: unknown;
  try {
    args = JSON.parse(argumentsJson);
  } catch {
    return argumentsJson.slice(0, 80) || undefined;
  }
  if (typeof args !== 'object' || args === null) return undefined;
  const a = args as Record<string, unknown>;
  const pick = [a.command, a.file_path, a.path, a.pattern, a.description, a.url, a.query].find(
    (v) => typeof v === 'string' && v.length > 0,
  );
  return typeof pick === 'string' ? pick.slice(0, 80) : undefined;
}

/** Keeps the spans that overlap [from, to]; agents are always the whole list. */
export function clipTimeline(timeline: Timeline, from: string | undefined, to: string | undefined): Timeline {
  if (from === undefined && to === undefined) return timeline;
  const lo = from === undefined ? -Infinity : Date.parse(from);
  const hi = to === undefined ? Infinity : Date.parse(to);
  const overlaps = (s: Span): boolean => Date.parse(s.start) <= hi && Date.parse(s.end ?? '9999-12-31T00:00:00Z') >= lo;
  return {
    ...timeline,
    turns: timeline.turns.filter(overlaps),
    jobs: timeline.jobs.filter(overlaps),
    tools: timeline.tools.filter(overlaps),
    returns: timeline.returns.filter((r) => Date.parse(r.at) >= lo && Date.parse(r.at) <= hi),
    hosts: timeline.hosts.filter(overlaps),
  };
}

/** The request's User-Agent, from its recorded headers (kept verbatim): which known client sent it. */
const USER_AGENT = `CASE WHEN json_valid(request_headers) THEN json_extract(request_headers, '$."user-agent"') END`;

/**
 * Every exchange from `floor - 1` (a model call's own row is written just before it, so may be just
 * below the floor), with what names its host row and, for a file another tool wrote, its path.
 */
const exchangesSql = (story: readonly string[]): string => `SELECT seq, event_id, timestamp, domain, port, conn_type,
    conn_type = 'tunnel', status_code, duration_ms, ttfb_ms IS NOT NULL, decision = 'denied', error_kind, trace_id IS NOT NULL,
    ${story.join(', ')}, ${USER_AGENT}, instr(request_headers, '"${AGENT_ID_HEADER}"') > 0, CASE WHEN :foreign THEN path END
  FROM net_events WHERE seq >= :floor - 1 ORDER BY seq`;

/** What the agent-story step keeps on an exchange's row; a file recorded before it has none of it. */
const STORY_COLUMNS = [...AGENT_ID_COLUMNS, 'side_call', 'conversation_hash'];

/** The model calls, each right after its exchange's row (net_event_id). */
const MODEL_CALLS = 'SELECT seq, id, net_event_id, model, stop_reason FROM model_calls WHERE seq >= ? ORDER BY seq';

/** Tool calls; an MCP call's is written just after its exchange's row, which tells it. */
const TOOLS = `SELECT seq, timestamp, call_id, tool_name, arguments, model_call_id, duration_ms,
    CASE WHEN origin = 'mcp' THEN (SELECT max(x.seq) FROM net_events x WHERE x.seq < tool_calls.seq) END
  FROM tool_calls WHERE seq >= ? ORDER BY seq`;

/** The exchanges read as MCP messages other than a tools/call (whose tool row tells it), by event id. */
const MCP_MESSAGES = "SELECT DISTINCT event_id FROM security_rule_events WHERE event_type LIKE 'mcp.%'";

const MARKS = 'SELECT net_event_id, kind, call_id, ref, label FROM story_marks ORDER BY id';

/** Where each result was first carried back, for a file recorded before story marks were. */
const FIRST_RESULTS = `SELECT r.call_id, n.event_id FROM tool_responses r JOIN model_calls m ON m.id = r.model_call_id
  JOIN net_events n ON n.seq = m.seq - 1 AND n.event_id = m.net_event_id WHERE r.seq >= ? ORDER BY r.seq`;

/** When something that started at `at` (`t` in milliseconds) and lasted `duration` ended; `at` when its time cannot be read. */
const endOf = (at: string, t: number, duration: number): string => (Number.isNaN(t) ? at : new Date(t + duration).toISOString());

/** A model call as the timeline reads it: its row, its exchange's event id, its model and finish. */
type CallRow = [seq: number, id: number, exchange: unknown, model: unknown, finish: unknown];

/** Reads the newest `maxEvents` events of a session (50,000 by default) and builds its timeline. */
export function readTimeline(store: SessionEventStore, ended: boolean, maxEvents = TIMELINE_MAX_EVENTS): Timeline {
  // seq counts from 1 without reuse, so a session whose newest seq is within the cap holds no more.
  const newest = store.newestEventSeq();
  const truncated = newest > maxEvents && store.bounds().total > maxEvents;
  const floor = truncated ? store.page(undefined, maxEvents)[0]!.rowSeq : 0;
  const tables = existingTables(store.db);
  // A file another tool wrote links no call to its exchange: its exchanges are told by their paths, and no client can be told.
  const foreign = writtenByAnotherTool(store.db, tables);
  // Rows as arrays, each read by its place in its SELECT, one at a time: a 10,000-turn session is
  // tens of thousands of rows, and a row dropped as soon as it is read costs the collector little.
  const rows = (sql: string, ...params: number[]): IterableIterator<unknown[]> =>
    store.db
      .prepare(sql)
      .raw(true)
      .iterate(...params) as IterableIterator<unknown[]>;

  // A model call is written right after its exchange's row and names it: the recorder's own link.
  const calls = new Map<number, CallRow>();
  for (const c of rows(MODEL_CALLS, floor)) calls.set((c as CallRow)[0] - 1, c as CallRow);
  const toolRows = [...rows(TOOLS, floor)];
  const mcpSeqs = new Set(toolRows.filter((r) => r[7] !== null).map((r) => int(r[0])! - 1));
  const mcpEvents = new Set(tables.has('security_rule_events') ? [...rows(MCP_MESSAGES)].map((r) => String(r[0])) : []);

  const clients = new Map<string, string | undefined>();
  const clientOf = (userAgent: unknown): string | undefined => {
    if (typeof userAgent !== 'string') return undefined;
    if (!clients.has(userAgent)) clients.set(userAgent, clientOfUserAgent(userAgent)?.name);
    return clients.get(userAgent);
  };
  const exchanges: ExchangeFact[] = [];
  const exchangeRows = store.db
    .prepare(exchangesSql(columnsOrNull(store.db, 'net_events', STORY_COLUMNS) ?? STORY_COLUMNS))
    .raw(true)
    .iterate({ floor, foreign: foreign ? 1 : 0 }) as IterableIterator<unknown[]>;
  for (const r of exchangeRows) {
    const [seq, id, at, domain, port, connType, tunnel, status, duration, reached, denied, errorKind, claimed] = r as [
      number,
      string,
      string,
      string,
      ...unknown[],
    ];
    const [agentId, parentAgentId, side, conversation, userAgent, agentHeader, path] = [r[13], r[14], r[15], r[16], r[17], r[18], r[19]];
    const call = calls.get(seq);
    const told = call !== undefined && call[2] === id ? call : undefined;
    // The row just below the floor only for the model call above it.
    if (seq < floor && told === undefined) continue;
    const modelRequest = told !== undefined || (!foreign && claimed === 1);
    const kind: HostSpan['kind'] =
      tunnel === 1
        ? 'tunnel'
        : modelRequest
          ? 'llm'
          : mcpSeqs.has(seq) || mcpEvents.has(id)
            ? 'mcp'
            : ((foreign ? exchangeKindOfPath(text(path) ?? '') : null) ?? 'http');
    const t = Date.parse(at);
    const ms = int(duration) ?? 0;
    exchanges.push({
      seq: requestSeqOf(told ? told[0] : seq),
      eventId: id,
      at,
      t,
      ms,
      end: endOf(at, t, ms),
      host: hostOf(domain, int(port), text(connType)),
      kind,
      status: int(status),
      denied: denied === 1,
      errorKind: text(errorKind),
      reached: reached === 1,
      client: foreign ? undefined : clientOf(userAgent),
      agentId: text(agentId),
      parentAgentId: text(parentAgentId),
      agentHeader: agentHeader === 1,
      call: modelRequest
        ? { row: told?.[1], model: text(told?.[3]), finish: text(told?.[4]), side: text(side), conversation: text(conversation) }
        : undefined,
    });
  }
  const byAnchor = new Map(exchanges.map((e) => [e.seq, e.eventId]));
  const tools = toolRows.map((r): ToolFact => {
    const [seq, at, callId, name, args, modelCallRow, duration, exchange] = r;
    const start = String(at);
    const preview = toolPreview(args);
    if (exchange === null)
      return {
        seq: finalSeqOf(int(seq)!),
        callId: String(callId),
        name: String(name),
        preview,
        at: start,
        modelCallRow: int(modelCallRow),
      };
    // An MCP call runs as long as its own exchange, which anchors it.
    const anchor = requestSeqOf(int(exchange)!);
    const end = endOf(start, Date.parse(start), int(duration) ?? 0);
    return { seq: anchor, callId: String(callId), name: String(name), preview, at: start, exchangeEventId: byAnchor.get(anchor), end };
  });
  const marked = tables.has('story_marks');
  const marks = marked
    ? [...rows(MARKS)].map((r): MarkFact => ({
        eventId: String(r[0]),
        kind: String(r[1]),
        callId: text(r[2]),
        ref: text(r[3]),
        label: text(r[4]),
      }))
    : [];
  const firstResults = new Map<string, string>();
  if (!marked)
    for (const [callId, eventId] of rows(FIRST_RESULTS, floor))
      if (!firstResults.has(String(callId))) firstResults.set(String(callId), String(eventId));
  return buildTimeline({ sessionId: store.sessionId, lastSeq: newest, truncated, ended, exchanges, tools, marks, firstResults });
}
