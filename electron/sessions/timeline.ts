import { existingTables } from '../store/rollup.ts';
import { hostOf } from '../telemetry/hosts.ts';
import { int, text, type Row } from './eventBuilders.ts';
import { finalSeqOf, requestSeqOf } from './eventSeq.ts';
import { exchangeKindOfPath, writtenByAnotherTool } from './foreignDatabases.ts';
import {
  EXCHANGE_EVENT_ROW_SEQ,
  MCP_CALL_EXCHANGE_SEQ,
  TOLD_AS_MCP,
  TOLD_BY_MODEL_CALL,
  type SessionEventStore,
} from './sessionEventStore.ts';

// The session as spans on one time axis (spec: GET /v1/sessions/{id}/timeline): every model call
// is a turn of the main agent, a tool runs from the response that asked for it to the request
// that carried its result back, and every HTTP exchange is a host row, of the kind its recorded
// rows say it is: a tunnel by its conn_type, a model call by the model_calls row the recorder wrote
// for it, an MCP call by its MCP rows.

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

function plus(iso: string, ms: number | undefined): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? iso : new Date(t + (ms ?? 0)).toISOString();
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

export interface TimelineInput {
  readonly sessionId: string;
  readonly lastSeq: number;
  readonly truncated: boolean;
  /** True once the session has ended: a span with no end then provably stopped. */
  readonly ended: boolean;
  readonly modelCalls: readonly Row[];
  readonly toolCalls: readonly Row[];
  readonly toolResponses: readonly Row[];
  /** Each with its `kind` as recorded (tunnel, llm or mcp), or none for plain HTTP. */
  readonly netEvents: readonly Row[];
}

export function buildTimeline(input: TimelineInput): Timeline {
  const turns: Turn[] = input.modelCalls.map((r) => {
    const status = int(r.status_code);
    const finish = text(r.stop_reason);
    const failed = (status !== undefined && status >= 400) || (finish === undefined && input.ended);
    return {
      agent: 'main',
      start: String(r.timestamp),
      end: plus(String(r.timestamp), int(r.duration_ms)),
      seq: int(r.seq)!,
      ...(finish ? { finish } : {}),
      ...(text(r.model) ? { model: String(r.model) } : {}),
      ...(failed ? { error: true as const } : {}),
    };
  });
  const firstResult = new Map<string, string>();
  for (const r of input.toolResponses) {
    const key = `${String(r.trace_id)}\u0000${String(r.call_id)}`;
    const at = String(r.timestamp);
    const seen = firstResult.get(key);
    if (seen === undefined || at < seen) firstResult.set(key, at);
  }
  const tools: ToolSpan[] = input.toolCalls.map((r) => {
    const start = String(r.timestamp);
    const answered = firstResult.get(`${String(r.trace_id)}\u0000${String(r.call_id)}`);
    const preview = toolPreview(r.arguments);
    const span: ToolSpan = { agent: 'main', id: String(r.call_id), name: String(r.tool_name), start, seq: int(r.seq)! };
    if (preview) span.preview = preview;
    // A result recorded before its call (a tool started mid-stream) is clamped to the start.
    if (answered !== undefined) span.end = answered < start ? start : answered;
    else if (input.ended) Object.assign(span, { end: start, lost: true as const });
    return span;
  });
  const hosts: HostSpan[] = input.netEvents.map((r) => {
    const kind = (text(r.kind) as HostSpan['kind'] | undefined) ?? 'http';
    const span: HostSpan = {
      host: hostOf(String(r.domain), int(r.port), text(r.conn_type)),
      kind,
      start: String(r.timestamp),
      seq: int(r.seq)!,
    };
    const status = int(r.status_code);
    if (status !== undefined) {
      span.status = status;
      span.end = plus(span.start, int(r.duration_ms));
    } else if (input.ended) span.end = span.start;
    if (r.decision === 'denied') {
      span.denied = true;
      span.end ??= span.start;
    }
    return span;
  });
  const starts = [...turns, ...tools, ...hosts].map((s) => s.start).sort();
  const ends = [...turns, ...tools, ...hosts].map((s) => s.end ?? s.start).sort();
  return {
    id: input.sessionId,
    lastSeq: input.lastSeq,
    ...(starts.length ? { start: starts[0]!, end: ends.at(-1)! } : {}),
    ...(input.truncated ? { truncated: true as const } : {}),
    agents: [{ id: 'main', label: 'main agent' }],
    turns,
    jobs: [],
    tools,
    returns: [],
    hosts,
  };
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

const COLUMNS = {
  model_calls: 'seq, timestamp, duration_ms, status_code, stop_reason, model',
  tool_calls: `seq, timestamp, call_id, tool_name, arguments, trace_id, ${MCP_CALL_EXCHANGE_SEQ} AS exchange_seq`,
  tool_responses: 'seq, timestamp, call_id, trace_id',
  net_events: `seq, timestamp, domain, port, path, conn_type, status_code, duration_ms, decision, ${EXCHANGE_EVENT_ROW_SEQ} AS exchange_seq,
    CASE WHEN conn_type = 'tunnel' THEN 'tunnel' WHEN ${TOLD_BY_MODEL_CALL} THEN 'llm' WHEN ${TOLD_AS_MCP} THEN 'mcp' END AS kind`,
} as const;

/** Spans anchor on wire seqs: a turn and a host on their exchange's request event, a tool on its own event or its MCP exchange's request. */
const anchored = (rows: Row[], anchor: (row: Row) => number): Row[] => rows.map((r) => ({ ...r, seq: anchor(r) }));
const exchangeRequest = (row: Row): number => requestSeqOf(int(row.exchange_seq) ?? int(row.seq)!);

/** Reads the newest `maxEvents` events of a session (50,000 by default) and builds its timeline. */
export function readTimeline(store: SessionEventStore, ended: boolean, maxEvents = TIMELINE_MAX_EVENTS): Timeline {
  // seq counts from 1 without reuse, so a session whose newest seq is within the cap holds no more.
  const newest = store.newestEventSeq();
  const truncated = newest > maxEvents && store.bounds().total > maxEvents;
  const floor = truncated ? store.page(undefined, maxEvents)[0]!.rowSeq : 0;
  const rows = (table: keyof typeof COLUMNS): Row[] =>
    store.db.prepare(`SELECT ${COLUMNS[table]} FROM ${table} WHERE seq >= ? ORDER BY seq`).all(floor) as Row[];
  // A file another tool wrote links no call to its exchange: its exchanges are told by their paths.
  const foreign = writtenByAnotherTool(store.db, existingTables(store.db));
  const byPath = (r: Row): Row => (r.kind === null && foreign ? { ...r, kind: exchangeKindOfPath(text(r.path) ?? '') } : r);
  return buildTimeline({
    sessionId: store.sessionId,
    lastSeq: newest,
    truncated,
    ended,
    modelCalls: anchored(rows('model_calls'), exchangeRequest),
    toolCalls: anchored(rows('tool_calls'), (r) => (int(r.exchange_seq) === undefined ? finalSeqOf(int(r.seq)!) : exchangeRequest(r))),
    toolResponses: rows('tool_responses'),
    netEvents: anchored(rows('net_events'), exchangeRequest).map(byPath),
  });
}
