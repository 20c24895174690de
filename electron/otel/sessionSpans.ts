import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from '@opentelemetry/semantic-conventions';
import {
  ATTR_FILE_PATH,
  ATTR_GEN_AI_AGENT_ID,
  ATTR_GEN_AI_AGENT_NAME,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_OUTPUT_MESSAGES,
  ATTR_GEN_AI_PROVIDER_NAME,
  ATTR_GEN_AI_REQUEST_MODEL,
  ATTR_GEN_AI_RESPONSE_FINISH_REASONS,
  ATTR_GEN_AI_RESPONSE_ID,
  ATTR_GEN_AI_RESPONSE_MODEL,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_INPUT_TOKENS,
  ATTR_GEN_AI_USAGE_OUTPUT_TOKENS,
  ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
  ATTR_MCP_METHOD_NAME,
  ATTR_PROCESS_COMMAND_ARGS,
  ATTR_PROCESS_EXIT_CODE,
  ATTR_SESSION_ID,
  GEN_AI_OPERATION_NAME_VALUE_CHAT,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
  GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
  GEN_AI_PROVIDER_NAME_VALUE_GCP_GEMINI,
} from '@opentelemetry/semantic-conventions/incubating';
import type { SessionEventStore } from '../sessions/sessionEventStore.ts';
import { readTimeline, type Agent, type HostSpan, type ToolSpan, type Turn } from '../sessions/timeline.ts';
import { rowSlotOf } from '../sessions/eventSeq.ts';
import { existingTables } from '../store/rollup.ts';
import { columnsOf } from '../store/tableColumns.ts';
import { spanIdOf, traceIdOf, type Attributes, type SessionTrace, type SpanEventRecord, type SpanRecord } from './spanRecord.ts';

// A recorded session as OpenTelemetry spans under the GenAI semantic conventions: the session is
// the root (invoke_agent), each model call a chat span under the agent that made it, each tool call
// an execute_tool span under the model call that asked for it, a subagent an invoke_agent span
// under the tool call that spawned it, an MCP call under the tool that made it, every other HTTP
// exchange (denials included) under the tool running when it was made, commands under the root,
// and file changes as events on the tool they are attributed to. Read from what the timeline and
// the tables recorded, never from a body. Message contents go out only when asked for.

export interface SessionFacts {
  readonly id: string;
  readonly name: string | null;
  readonly createdAt: string;
  /** When the session ended; null while it runs. */
  readonly stoppedAt: string | null;
  /** The agent the session ran (claude, codex, gemini), when known. */
  readonly agent: string | null;
}

export interface SpanOptions {
  /** Message contents, tool arguments and results (opt-in under the conventions). */
  readonly content: boolean;
}

/** Capsem's own attributes, beside the conventions'. */
export const CAPSEM_ATTR = {
  sessionName: 'capsem.session.name',
  costUsd: 'capsem.cost_usd',
  sideCall: 'capsem.side_call',
  policyDecision: 'capsem.policy.decision',
  policyRule: 'capsem.policy.rule',
  mcpServer: 'capsem.mcp.server',
  fileAction: 'capsem.file.action',
  fileEntries: 'capsem.file.entries',
  fileSize: 'capsem.file.size',
  subagentType: 'capsem.agent.type',
} as const;

/** Providers as the conventions name them, where their id differs from Capsem's. */
const PROVIDER_NAMES: Readonly<Record<string, string>> = { google: GEN_AI_PROVIDER_NAME_VALUE_GCP_GEMINI, mistral: 'mistral_ai' };

interface CallRow {
  seq: number;
  id: number;
  provider: string;
  model: string | null;
  message_id: string | null;
  status_code: number | null;
  stop_reason: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  estimated_cost_usd: number | null;
  usage_details: string | null;
  host: string | null;
  text_content: string | null;
  side_call: string | null;
}

interface ToolRow {
  call_id: string;
  tool_name: string;
  timestamp: string;
  duration_ms: number | null;
  model_call_id: number | null;
  status: string;
  error_message: string | null;
  arguments: string | null;
  origin: string;
  server_name: string | null;
}

interface ResultRow {
  call_id: string;
  /** The model call whose request carried the result back. */
  model_call_id: number;
  is_error: number;
  content_preview: string | null;
}

interface ExchangeRow {
  seq: number;
  method: string | null;
  path: string | null;
  domain: string;
  port: number | null;
  conn_type: string | null;
  status_code: number | null;
  decision: string;
  matched_rule: string | null;
  error_kind: string | null;
}

interface ChangeRow {
  at: string;
  action: string;
  path: string;
  size: number | null;
  entries: number | null;
}

interface ExecRow {
  id: number;
  at: string;
  argv: string;
  exit_code: number | null;
  signal: string | null;
  duration_ms: number | null;
  error_message: string | null;
}

const time = (iso: string | undefined): number => (iso === undefined ? NaN : Date.parse(iso));

/** `column` when `table` has it, else NULL under its name: a file another tool wrote may lack Capsem's own columns. */
function selectable(have: Set<string>, columns: readonly string[]): string {
  return columns.map((c) => (have.has(c) ? c : `NULL AS ${c}`)).join(', ');
}

function usageOf(details: string | null): Record<string, unknown> {
  if (details === null) return {};
  try {
    const parsed = JSON.parse(details) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

const count = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Sets each defined value. */
function put(attributes: Attributes, values: Record<string, string | number | boolean | string[] | null | undefined>): Attributes {
  for (const [k, v] of Object.entries(values)) if (v !== null && v !== undefined) attributes[k] = v;
  return attributes;
}

/** Reads the session's spans; only spans that have ended are returned. */
export function readSessionSpans(store: SessionEventStore, session: SessionFacts, options: SpanOptions): SessionTrace {
  const db = store.db;
  const ended = session.stoppedAt !== null;
  const tables = existingTables(db);
  const idOf = (key: string): string => spanIdOf(session.id, key);
  const rootId = idOf('session');
  const timeline = readTimeline(store, ended, Number.MAX_SAFE_INTEGER);
  const spans: SpanRecord[] = [];
  let open = 0;
  const emit = (span: SpanRecord | null): void => {
    if (span === null) open += 1;
    else spans.push(span);
  };

  const calls = new Map<number, CallRow>();
  if (tables.has('model_calls')) {
    const have = columnsOf(db, 'model_calls');
    const netHave = tables.has('net_events') ? columnsOf(db, 'net_events') : new Set<string>();
    const side =
      netHave.has('side_call') && have.has('net_event_id') ? '(SELECT n.side_call FROM net_events n WHERE n.seq = m.seq - 1)' : 'NULL';
    const sql = `SELECT ${selectable(have, ['seq', 'id', 'provider', 'model', 'message_id', 'status_code', 'stop_reason', 'input_tokens', 'output_tokens', 'estimated_cost_usd', 'usage_details', 'host', 'text_content'])}, ${side} AS side_call FROM model_calls m`;
    for (const row of db.prepare(sql).iterate() as IterableIterator<CallRow>) calls.set(row.seq, row);
  }
  const tools = new Map<string, ToolRow>();
  const toolErrors = new Map<string, string>();
  if (tables.has('tool_calls')) {
    const have = columnsOf(db, 'tool_calls');
    const sql = `SELECT ${selectable(have, ['call_id', 'tool_name', 'timestamp', 'duration_ms', 'model_call_id', 'status', 'error_message', 'arguments', 'origin', 'server_name'])} FROM tool_calls ORDER BY seq`;
    for (const row of db.prepare(sql).iterate() as IterableIterator<ToolRow>) {
      if (!tools.has(row.call_id)) tools.set(row.call_id, row);
      if (row.status === 'error' || row.error_message) toolErrors.set(row.call_id, row.error_message ?? 'the tool call failed');
    }
  }
  const results = new Map<string, ResultRow>();
  if (tables.has('tool_responses'))
    for (const row of db
      .prepare('SELECT call_id, model_call_id, is_error, content_preview FROM tool_responses ORDER BY id')
      .iterate() as IterableIterator<ResultRow>)
      if (!results.has(row.call_id)) results.set(row.call_id, row);

  // The agents: the main one is the session's root; a subagent is a span under the tool call that spawned it.
  const agentById = new Map(timeline.agents.map((a) => [a.id, a]));
  const toolById = new Map(timeline.tools.map((t) => [t.id, t]));
  const agentSpanId = (agentId: string): string => {
    const agent = agentById.get(agentId);
    return agent?.parent === undefined ? rootId : idOf(`agent/${agentId}`);
  };
  const turnsOf = new Map<string, Turn[]>();
  for (const turn of timeline.turns) turnsOf.set(turn.agent, [...(turnsOf.get(turn.agent) ?? []), turn]);
  for (const agent of timeline.agents) if (agent.parent !== undefined) emit(agentSpan(agent));

  function agentSpan(agent: Agent): SpanRecord | null {
    const turns = turnsOf.get(agent.id) ?? [];
    const start = time(agent.spawnedAt ?? turns[0]?.start);
    const end = time(agent.returnedAt ?? (ended ? turns.at(-1)?.end : undefined));
    if (Number.isNaN(start) || Number.isNaN(end)) return null;
    const spawner =
      agent.spawnTool !== undefined && toolById.has(agent.spawnTool) ? idOf(`tool/${agent.spawnTool}`) : agentSpanId(agent.parent!);
    return {
      spanId: idOf(`agent/${agent.id}`),
      parentId: spawner,
      name: `${GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT} ${agent.type ?? agent.label}`,
      kind: 'internal',
      start,
      end: Math.max(start, end),
      attributes: put(
        {},
        {
          [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
          [ATTR_GEN_AI_AGENT_ID]: agent.id,
          [ATTR_GEN_AI_AGENT_NAME]: agent.label,
          [CAPSEM_ATTR.subagentType]: agent.type,
          [ATTR_GEN_AI_TOOL_CALL_ID]: agent.spawnTool,
        },
      ),
      events: [],
      error: null,
    };
  }

  // Model calls: the story's turns, then the calls it keeps off the story (side calls, a client it
  // does not know), under the root.
  const callSpans = new Map<number, { spanId: string; start: number; end: number }>();
  const told = new Set<number>();
  const emitCall = (call: CallRow, spanId: string, parentId: string, start: number, end: number, agent: string | undefined): void => {
    callSpans.set(call.id, { spanId, start, end });
    emit(chatSpan(call, spanId, parentId, start, end, agent));
  };
  for (const turn of timeline.turns) {
    const call = calls.get(rowSlotOf(turn.seq).rowSeq);
    if (call === undefined) continue;
    told.add(call.seq);
    emitCall(call, idOf(`turn/${turn.seq}`), agentSpanId(turn.agent), time(turn.start), time(turn.end), turn.agent);
  }
  const llmHosts = new Map(timeline.hosts.filter((h) => h.kind === 'llm').map((h) => [rowSlotOf(h.seq).rowSeq, h]));
  for (const call of calls.values()) {
    const host = told.has(call.seq) ? undefined : llmHosts.get(call.seq);
    if (host !== undefined) emitCall(call, idOf(`call/${call.seq}`), rootId, time(host.start), time(host.end), undefined);
  }

  function chatSpan(
    call: CallRow,
    spanId: string,
    parentId: string,
    start: number,
    end: number,
    agent: string | undefined,
  ): SpanRecord | null {
    if (Number.isNaN(start) || Number.isNaN(end)) return null;
    const usage = usageOf(call.usage_details);
    const cacheRead = count(usage.cache_read);
    const cacheWrite = count(usage.cache_write);
    // The conventions count every input token, cached ones included; the recorder keeps the uncached ones apart.
    const input = call.input_tokens === null ? undefined : call.input_tokens + (cacheRead ?? 0) + (cacheWrite ?? 0);
    const failed = call.status_code === null || call.status_code < 200 || call.status_code >= 300;
    const attributes = put(
      {},
      {
        [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_CHAT,
        [ATTR_GEN_AI_PROVIDER_NAME]: PROVIDER_NAMES[call.provider] ?? call.provider,
        [ATTR_GEN_AI_REQUEST_MODEL]: call.model,
        [ATTR_GEN_AI_RESPONSE_MODEL]: failed ? null : call.model,
        [ATTR_GEN_AI_RESPONSE_ID]: call.message_id,
        [ATTR_GEN_AI_RESPONSE_FINISH_REASONS]: call.stop_reason === null ? null : [call.stop_reason],
        [ATTR_GEN_AI_USAGE_INPUT_TOKENS]: input,
        [ATTR_GEN_AI_USAGE_OUTPUT_TOKENS]: call.output_tokens,
        [ATTR_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS]: cacheRead,
        [ATTR_GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS]: cacheWrite,
        [ATTR_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS]: count(usage.thinking),
        [ATTR_GEN_AI_AGENT_ID]: agent,
        [CAPSEM_ATTR.costUsd]: call.estimated_cost_usd ?? 0,
        [CAPSEM_ATTR.sideCall]: call.side_call,
        [ATTR_SERVER_ADDRESS]: call.host,
        [ATTR_HTTP_RESPONSE_STATUS_CODE]: call.status_code,
        [ATTR_ERROR_TYPE]: failed ? String(call.status_code ?? 'no response') : null,
      },
    );
    if (options.content && call.text_content !== null)
      attributes[ATTR_GEN_AI_OUTPUT_MESSAGES] = JSON.stringify([
        { role: 'assistant', parts: [{ type: 'text', content: call.text_content }], finish_reason: call.stop_reason ?? '' },
      ]);
    return {
      spanId,
      parentId,
      name: `${GEN_AI_OPERATION_NAME_VALUE_CHAT} ${call.model ?? call.provider}`,
      kind: 'client',
      start,
      end: Math.max(start, end),
      attributes,
      events: [],
      error: failed ? `the model call ended with ${call.status_code ?? 'no response'}` : null,
    };
  }

  // Tool calls: under the model call that asked for them; an MCP call under the tool running it.
  // Tool calls the story does not tell (a client it does not know): from the answer that asked for
  // them to the request that carried their result.
  const toldTools = new Set(timeline.tools.map((t) => t.id));
  const iso = (ms: number): string => new Date(ms).toISOString();
  const untold: ToolSpan[] = [];
  for (const row of tools.values()) {
    if (toldTools.has(row.call_id)) continue;
    if (row.origin === 'mcp') {
      // An MCP call runs as long as its own exchange.
      const at = time(row.timestamp);
      if (!Number.isNaN(at))
        untold.push({ agent: '', id: row.call_id, name: row.tool_name, start: iso(at), end: iso(at + (row.duration_ms ?? 0)), seq: 0 });
      continue;
    }
    if (row.model_call_id === null) continue;
    const asked = callSpans.get(row.model_call_id);
    if (asked === undefined) continue;
    const carried = results.get(row.call_id);
    const answered = carried === undefined ? undefined : callSpans.get(carried.model_call_id)?.start;
    const end = answered ?? (ended ? asked.end : undefined);
    untold.push({
      agent: '',
      id: row.call_id,
      name: row.tool_name,
      start: iso(asked.end),
      end: end === undefined ? undefined : iso(end),
      seq: 0,
    });
  }
  const allTools = [...timeline.tools, ...untold];
  const nativeTools = allTools.filter((t) => tools.get(t.id)?.origin !== 'mcp').sort((a, b) => time(a.start) - time(b.start));
  const toolEvents = new Map<string, SpanEventRecord[]>();
  const rootEvents: SpanEventRecord[] = [];
  /** The innermost tool running at `t` (of `agent`, when given); one named `named` (an MCP tool's own name, or with the mcp__server__ prefix) first. */
  const runningTool = (t: number, agent?: string, named?: string): ToolSpan | undefined => {
    let lo = 0;
    let hi = nativeTools.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (time(nativeTools[mid]!.start) <= t) lo = mid + 1;
      else hi = mid;
    }
    let innermost: ToolSpan | undefined;
    for (let i = lo - 1; i >= 0 && i >= lo - 64; i--) {
      const tool = nativeTools[i]!;
      if ((agent !== undefined && tool.agent !== agent) || (tool.end !== undefined && time(tool.end) < t)) continue;
      if (named === undefined || tool.name === named || tool.name.endsWith(`__${named}`)) return tool;
      innermost ??= tool;
    }
    return innermost;
  };
  // File changes: events on the tool they are attributed to (one running when the change was seen), else on the root.
  if (tables.has('fs_events')) {
    const have = columnsOf(db, 'fs_events');
    const sql = `SELECT timestamp AS at, action, path, size, ${have.has('entries') ? 'entries' : 'NULL AS entries'} FROM fs_events ORDER BY seq`;
    for (const row of db.prepare(sql).iterate() as IterableIterator<ChangeRow>) {
      const at = time(row.at);
      const event: SpanEventRecord = {
        name: 'capsem.file.change',
        at,
        attributes: put(
          {},
          {
            [ATTR_FILE_PATH]: row.path,
            [CAPSEM_ATTR.fileAction]: row.action,
            [CAPSEM_ATTR.fileSize]: row.size,
            [CAPSEM_ATTR.fileEntries]: row.entries,
          },
        ),
      };
      const tool = Number.isNaN(at) ? undefined : runningTool(at);
      if (tool) toolEvents.set(tool.id, [...(toolEvents.get(tool.id) ?? []), event]);
      else rootEvents.push(event);
    }
  }
  for (const span of allTools) emit(toolSpan(span));

  function toolSpan(span: ToolSpan): SpanRecord | null {
    if (span.end === undefined) return null;
    const row = tools.get(span.id);
    const mcp = row?.origin === 'mcp';
    const start = time(span.start);
    let parentId: string;
    if (mcp) {
      const runner = runningTool(start, span.agent || undefined, span.name);
      parentId = runner ? idOf(`tool/${runner.id}`) : agentSpanId(span.agent);
    } else {
      const turn = row?.model_call_id != null ? callSpans.get(row.model_call_id)?.spanId : undefined;
      parentId = turn ?? agentSpanId(span.agent);
    }
    const result = results.get(span.id);
    const error = toolErrors.get(span.id) ?? (result?.is_error === 1 ? 'the tool reported an error' : null);
    const attributes = put(
      {},
      {
        [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
        [ATTR_GEN_AI_TOOL_NAME]: span.name,
        [ATTR_GEN_AI_TOOL_CALL_ID]: span.id,
        [ATTR_GEN_AI_TOOL_TYPE]: 'function',
        [ATTR_GEN_AI_AGENT_ID]: span.agent || null,
        [ATTR_MCP_METHOD_NAME]: mcp ? 'tools/call' : null,
        [CAPSEM_ATTR.mcpServer]: mcp ? row?.server_name : null,
        [ATTR_ERROR_TYPE]: error === null ? null : 'tool_error',
      },
    );
    if (options.content)
      put(attributes, { [ATTR_GEN_AI_TOOL_CALL_ARGUMENTS]: row?.arguments, [ATTR_GEN_AI_TOOL_CALL_RESULT]: result?.content_preview });
    return {
      spanId: idOf(`tool/${span.id}`),
      parentId,
      name: mcp ? `tools/call ${span.name}` : `${GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL} ${span.name}`,
      kind: mcp ? 'client' : 'internal',
      start,
      end: Math.max(start, time(span.end)),
      attributes,
      events: toolEvents.get(span.id) ?? [],
      error,
    };
  }

  // Every other exchange: HTTP under the tool running when it was made, denials with the rule that denied them.
  if (tables.has('net_events')) {
    const have = columnsOf(db, 'net_events');
    const wanted = timeline.hosts.filter((h) => h.kind === 'http' || h.kind === 'tunnel' || (h.denied === true && h.kind !== 'llm'));
    const rowsBySeq = new Map<number, ExchangeRow>();
    const select = db.prepare(
      `SELECT ${selectable(have, ['seq', 'method', 'path', 'domain', 'port', 'conn_type', 'status_code', 'decision', 'matched_rule', 'error_kind'])} FROM net_events WHERE seq = ?`,
    );
    for (const host of wanted) {
      const row = select.get(rowSlotOf(host.seq).rowSeq) as ExchangeRow | undefined;
      if (row) rowsBySeq.set(host.seq, row);
    }
    for (const host of wanted) emit(exchangeSpan(host, rowsBySeq.get(host.seq)));
  }

  function exchangeSpan(host: HostSpan, row: ExchangeRow | undefined): SpanRecord | null {
    if (row === undefined || host.end === undefined) return null;
    const start = time(host.start);
    const tunnel = host.kind === 'tunnel';
    const method = tunnel ? 'CONNECT' : (row.method ?? 'GET');
    const scheme = row.conn_type === 'http' ? 'http' : 'https';
    const port = row.port ?? (scheme === 'http' ? 80 : 443);
    const denied = row.decision === 'denied';
    const status = row.status_code;
    const failed = denied || status === null || status >= 400 || row.error_kind !== null;
    const runner = runningTool(start);
    return {
      spanId: idOf(`http/${host.seq}`),
      parentId: runner ? idOf(`tool/${runner.id}`) : rootId,
      name: method,
      kind: 'client',
      start,
      end: Math.max(start, time(host.end)),
      attributes: put(
        {},
        {
          [ATTR_HTTP_REQUEST_METHOD]: method,
          // The path without its query: a query can carry a key, and the conventions leave it optional.
          [ATTR_URL_FULL]: tunnel
            ? null
            : `${scheme}://${row.domain}${port === (scheme === 'http' ? 80 : 443) ? '' : `:${port}`}${row.path ?? '/'}`,
          [ATTR_SERVER_ADDRESS]: row.domain,
          [ATTR_SERVER_PORT]: port,
          [ATTR_HTTP_RESPONSE_STATUS_CODE]: status,
          [ATTR_ERROR_TYPE]: denied ? 'denied' : (row.error_kind ?? (status !== null && status >= 400 ? String(status) : null)),
          [CAPSEM_ATTR.policyDecision]: row.decision,
          [CAPSEM_ATTR.policyRule]: row.matched_rule,
        },
      ),
      events: [],
      error: failed
        ? denied
          ? `denied by policy${row.matched_rule ? ` (${row.matched_rule})` : ''}`
          : `the exchange failed (${row.error_kind ?? status ?? 'no response'})`
        : null,
    };
  }

  // Commands the host ran in the guest: under the root.
  if (tables.has('exec_events'))
    for (const row of db
      .prepare('SELECT id, timestamp AS at, argv, exit_code, signal, duration_ms, error_message FROM exec_events ORDER BY id')
      .iterate() as IterableIterator<ExecRow>) {
      const start = time(row.at);
      if (Number.isNaN(start) || (row.exit_code === null && row.signal === null && row.error_message === null)) {
        open += 1;
        continue;
      }
      let argv: string[] = [];
      try {
        argv = (JSON.parse(row.argv) as unknown[]).map(String);
      } catch {
        argv = [row.argv];
      }
      const failed = row.exit_code !== 0 || row.signal !== null || row.error_message !== null;
      spans.push({
        spanId: idOf(`exec/${row.id}`),
        parentId: rootId,
        name: `exec ${argv[0] ?? ''}`.trim(),
        kind: 'internal',
        start,
        end: start + (row.duration_ms ?? 0),
        attributes: put(
          {},
          {
            [ATTR_PROCESS_COMMAND_ARGS]: argv,
            [ATTR_PROCESS_EXIT_CODE]: row.exit_code,
            [ATTR_ERROR_TYPE]: failed ? (row.signal ?? 'exit') : null,
          },
        ),
        events: [],
        error: failed ? (row.error_message ?? (row.signal ? `killed by ${row.signal}` : `exited with ${row.exit_code}`)) : null,
      });
    }

  // The session itself, once it has ended.
  const start = time(session.createdAt);
  if (ended && !Number.isNaN(start)) {
    let cost = 0;
    for (const call of calls.values()) cost += call.estimated_cost_usd ?? 0;
    const end = Math.max(start, time(session.stoppedAt!), ...spans.map((s) => s.end));
    spans.push({
      spanId: rootId,
      parentId: null,
      name: `${GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT} ${session.agent ?? 'session'}`,
      kind: 'internal',
      start,
      end,
      attributes: put(
        {},
        {
          [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_INVOKE_AGENT,
          [ATTR_GEN_AI_AGENT_NAME]: session.agent,
          [ATTR_GEN_AI_CONVERSATION_ID]: session.id,
          [ATTR_SESSION_ID]: session.id,
          [CAPSEM_ATTR.sessionName]: session.name,
          [CAPSEM_ATTR.costUsd]: Math.round(cost * 1e9) / 1e9,
        },
      ),
      events: rootEvents,
      error: null,
    });
  } else open += 1;
  return { traceId: traceIdOf(session.id), spans, open };
}
