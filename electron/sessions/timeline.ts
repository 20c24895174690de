import { existingTables } from '../store/rollup.ts';
import { AGENT_ID_HEADER } from '../telemetry/claudeCode.ts';
import { int, text, type Row } from './eventBuilders.ts';
import { clientOfUserAgent } from './eventClient.ts';
import { finalSeqOf, requestSeqOf } from './eventSeq.ts';
import { exchangeKindOfPath, writtenByAnotherTool } from './foreignDatabases.ts';
import { TOLD_AS_MCP, type SessionEventStore } from './sessionEventStore.ts';
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

/** A host's row: h:443 shares h's, as the scheme's default port does. */
export function hostRow(domain: string, port: number | undefined, connType: string | undefined): string {
  return port === undefined || port === 443 || (port === 80 && connType === 'http') ? domain : `${domain}:${port}`;
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
const USER_AGENT = `CASE WHEN json_valid(n.request_headers) THEN json_extract(n.request_headers, '$."user-agent"') END`;

/** Every exchange, with the model call the recorder wrote for it (right after it, so its own row may be just below the floor) and its kind. */
const EXCHANGES = `SELECT n.seq, n.event_id, n.timestamp, n.domain, n.port, n.path, n.conn_type, n.status_code, n.duration_ms,
    n.ttfb_ms IS NOT NULL AS reached, n.decision, n.error_kind, n.trace_id IS NOT NULL AS claimed, n.agent_id, n.parent_agent_id,
    n.side_call, n.conversation_hash, ${USER_AGENT} AS user_agent, instr(n.request_headers, '"${AGENT_ID_HEADER}"') > 0 AS agent_header,
    m.seq AS call_seq, m.id AS call_row, m.model, m.stop_reason,
    CASE WHEN n.conn_type = 'tunnel' THEN 'tunnel' WHEN m.id IS NOT NULL THEN 'llm' WHEN ${TOLD_AS_MCP.replaceAll('net_events.', 'n.')} THEN 'mcp' END AS kind
  FROM net_events n LEFT JOIN model_calls m ON m.seq = n.seq + 1 AND m.net_event_id = n.event_id
  WHERE n.seq >= :floor - 1 AND (n.seq >= :floor OR m.id IS NOT NULL) ORDER BY n.seq`;

/** Tool calls; an MCP call's is written just after its exchange's row, which tells it. */
const TOOLS = `SELECT seq, timestamp, call_id, tool_name, arguments, model_call_id, duration_ms,
    CASE WHEN origin = 'mcp' THEN (SELECT max(x.seq) FROM net_events x WHERE x.seq < tool_calls.seq) END AS exchange_seq
  FROM tool_calls WHERE seq >= ? ORDER BY seq`;

const MARKS = 'SELECT net_event_id, kind, call_id, ref, label FROM story_marks ORDER BY id';

/** Where each result was first carried back, for a file recorded before story marks were. */
const FIRST_RESULTS = `SELECT r.call_id, n.event_id FROM tool_responses r JOIN model_calls m ON m.id = r.model_call_id
  JOIN net_events n ON n.seq = m.seq - 1 AND n.event_id = m.net_event_id WHERE r.seq >= ? ORDER BY r.seq`;

/** Reads the newest `maxEvents` events of a session (50,000 by default) and builds its timeline. */
export function readTimeline(store: SessionEventStore, ended: boolean, maxEvents = TIMELINE_MAX_EVENTS): Timeline {
  // seq counts from 1 without reuse, so a session whose newest seq is within the cap holds no more.
  const newest = store.newestEventSeq();
  const truncated = newest > maxEvents && store.bounds().total > maxEvents;
  const floor = truncated ? store.page(undefined, maxEvents)[0]!.rowSeq : 0;
  const tables = existingTables(store.db);
  // A file another tool wrote links no call to its exchange: its exchanges are told by their paths, and no client can be told.
  const foreign = writtenByAnotherTool(store.db, tables);
  const clients = new Map<string, string | undefined>();
  const clientOf = (userAgent: unknown): string | undefined => {
    if (typeof userAgent !== 'string') return undefined;
    if (!clients.has(userAgent)) clients.set(userAgent, clientOfUserAgent(userAgent)?.name);
    return clients.get(userAgent);
  };
  const exchanges = (store.db.prepare(EXCHANGES).all({ floor }) as Row[]).map((r): ExchangeFact => {
    const kind = (text(r.kind) ??
      (foreign ? exchangeKindOfPath(text(r.path) ?? '') : undefined) ??
      (r.claimed ? 'llm' : 'http')) as HostSpan['kind'];
    const modelRequest = int(r.call_row) !== undefined || (!foreign && r.claimed === 1);
    return {
      seq: requestSeqOf(int(r.call_seq) ?? int(r.seq)!),
      eventId: String(r.event_id),
      at: String(r.timestamp),
      ms: int(r.duration_ms) ?? 0,
      host: hostRow(String(r.domain), int(r.port), text(r.conn_type)),
      kind,
      status: int(r.status_code),
      denied: r.decision === 'denied',
      errorKind: text(r.error_kind),
      reached: r.reached === 1,
      client: foreign ? undefined : clientOf(r.user_agent),
      agentId: text(r.agent_id),
      parentAgentId: text(r.parent_agent_id),
      agentHeader: r.agent_header === 1,
      ...(modelRequest
        ? {
            call: {
              row: int(r.call_row),
              model: text(r.model),
              finish: text(r.stop_reason),
              side: text(r.side_call),
              conversation: text(r.conversation_hash),
            },
          }
        : {}),
    };
  });
  const byAnchor = new Map(exchanges.map((e) => [e.seq, e.eventId]));
  const tools = (store.db.prepare(TOOLS).all(floor) as Row[]).map((r): ToolFact => {
    const exchange = int(r.exchange_seq);
    return {
      seq: exchange === undefined ? finalSeqOf(int(r.seq)!) : requestSeqOf(exchange),
      callId: String(r.call_id),
      name: String(r.tool_name),
      preview: toolPreview(r.arguments),
      modelCallRow: exchange === undefined ? int(r.model_call_id) : undefined,
      exchangeEventId: exchange === undefined ? undefined : byAnchor.get(requestSeqOf(exchange)),
      at: String(r.timestamp),
      ms: int(r.duration_ms) ?? 0,
    };
  });
  const marked = tables.has('story_marks');
  const marks = marked
    ? (store.db.prepare(MARKS).all() as Row[]).map((r): MarkFact => ({
        eventId: String(r.net_event_id),
        kind: String(r.kind),
        callId: text(r.call_id),
        ref: text(r.ref),
        label: text(r.label),
      }))
    : [];
  const firstResults = new Map<string, string>();
  if (!marked)
    for (const r of store.db.prepare(FIRST_RESULTS).all(floor) as Row[])
      if (!firstResults.has(String(r.call_id))) firstResults.set(String(r.call_id), String(r.event_id));
  return buildTimeline({ sessionId: store.sessionId, lastSeq: newest, truncated, ended, exchanges, tools, marks, firstResults });
}
