import type {
  EventClient,
  Inference,
  Invocation,
  JsonObject,
  Mcp,
  RawCapture,
  SessionEvent,
  ToolCallView,
  ToolResultView,
} from '../contract/sessionEvent.ts';
import { hostOf } from '../telemetry/hosts.ts';
import { providerNamed } from '../telemetry/providers/index.ts';
import { isObject, lenientJson } from '../telemetry/json.ts';
import type { McpMessage } from '../telemetry/mcp.ts';
import { requestViewOfCall } from './callRequest.ts';
import { clientOfUserAgent } from './eventClient.ts';
import { wireSeqOf, type EventPhaseSlot } from './eventSeq.ts';

// Rows in, wire events out: pure functions, so the wire form is pinned by a golden file without
// a database. Unknown fields are left undefined, which JSON leaves out: absent stays absent on
// the wire and nothing unknown is sent as zero. Every value also has the JSON type a Cortex
// client's Go structs decode (pipeline.SessionEvent): Go fails a whole page on one mismatch, so a
// count is a whole number, a time is RFC 3339, and a field Go holds as a map is an object.

export type Row = Record<string, unknown>;

export const text = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);
/** A whole number, or unknown: a fraction (a REAL in a column another tool wrote) would fail a Go int. */
export const int = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isSafeInteger(v) ? v : typeof v === 'bigint' ? Number(v) : undefined;

/** A count or a duration: whole and not negative, or unknown. */
const amount = (v: unknown): number | undefined => {
  const n = int(v);
  return n !== undefined && n >= 0 ? n : undefined;
};

/** An HTTP status, or unknown: anything outside 100-599 is no status a client could have been sent. */
const httpStatus = (v: unknown): number | undefined => {
  const n = int(v);
  return n !== undefined && n >= 100 && n <= 599 ? n : undefined;
};

const RFC_3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
/** Go's zero time: what a Go client reads for a row whose time cannot be read at all. */
const UNKNOWN_TIME = '0001-01-01T00:00:00Z';

/** The row's time as RFC 3339, the only form Go's time.Time decodes; another form that still names an instant is rewritten. */
export function rfc3339(value: unknown): string {
  const written = String(value);
  if (RFC_3339.test(written)) return written;
  const ms = Date.parse(written);
  return Number.isNaN(ms) ? UNKNOWN_TIME : new Date(ms).toISOString();
}

function decodedPath(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  const bare = path.split('?')[0]!;
  try {
    return decodeURIComponent(bare);
  } catch {
    return bare;
  }
}

function base(
  sessionId: string,
  row: Row,
  kind: SessionEvent['kind'],
  phase: SessionEvent['phase'],
  slot: EventPhaseSlot,
  requestId?: string,
): SessionEvent {
  return {
    sessionId,
    seq: wireSeqOf(int(row.seq)!, slot),
    at: rfc3339(row.timestamp),
    kind,
    direction: 'outbound',
    phase,
    requestId,
    eventId: String(row.event_id),
    traceId: text(row.trace_id),
    turnId: text(row.turn_id),
  };
}

function processOf(row: Row): SessionEvent['process'] {
  const name = text(row.process_name);
  const pid = int(row.pid);
  return name === undefined && pid === undefined ? undefined : { name, pid };
}

/** The Claude Code agent that sent the request, and the one that started it, as recorded from its headers. */
function agentOf(row: Row): Pick<SessionEvent, 'subagent' | 'parentSubagent'> {
  return { subagent: text(row.agent_id), parentSubagent: text(row.parent_agent_id) };
}

function clientOf(row: Row): EventClient | undefined {
  const headers = lenientJson(row.request_headers);
  const agent = isObject(headers) ? headers['user-agent'] : undefined;
  return clientOfUserAgent(Array.isArray(agent) ? agent.filter((v) => typeof v === 'string').join(' ') : text(agent));
}

/** What the credential broker did with each stand-in the request carried, as the pipeline step it is. */
function credentialStep(outcome: string): Invocation {
  if (outcome === 'substituted') return { plugin: 'credential', action: 'modify', reason: 'substituted' };
  if (outcome === 'refused') return { plugin: 'credential', action: 'deny', reason: 'stand_in_elsewhere' };
  return { plugin: 'credential', action: 'observe', reason: outcome };
}

/**
 * The recording pipeline's steps on one request, in the order they act: the policy's verdict, the
 * broker's substitutions, then the recording of the exchange, which goes no further on a denied
 * request.
 */
function invocationsOf(row: Row, recorded: string): SessionEvent['invocations'] {
  const denied = row.decision === 'denied';
  const outbound: Invocation[] = [{ plugin: 'policy', action: denied ? 'deny' : 'allow', reason: text(row.matched_rule) }];
  for (const outcome of text(row.credential_outcomes)?.split(',') ?? []) outbound.push(credentialStep(outcome));
  if (!denied) outbound.push({ plugin: 'exchange', action: 'observe', reason: recorded });
  return { outbound };
}

/**
 * error.code is the status the upstream sent, as a string: Cortex's EventError holds it as one (the
 * spec's 413 has "an empty error.code"). A 502 the proxy made up for an upstream it could not
 * reach, and a refusal of its own (403, 421, 426), carry none: no upstream answered.
 */
function upstreamCode(kind: string, status: number | undefined): string | undefined {
  const sent = status === undefined ? undefined : String(status);
  if (kind.startsWith('upstream_')) return status === 502 ? undefined : sent;
  return kind === 'decode_error' || kind === 'proxy_error' ? sent : undefined;
}

function errorOf(kind: string | undefined, message: string | undefined, status: number | undefined): SessionEvent['error'] {
  return kind === undefined ? undefined : { kind, message: message ?? kind, code: upstreamCode(kind, status) };
}

/** The spec types these as objects: a value that is not one is sent as {"value": ...}, never bare. */
function asJsonObject(value: unknown): JsonObject | undefined {
  if (value === undefined) return undefined;
  return isObject(value) ? value : { value };
}

const MCP_ACTIONS = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** The JSON-RPC call an exchange carried, as its request (method, id, params) or its answer (result or error). */
function mcpView(message: McpMessage, slot: EventPhaseSlot, full: boolean): Mcp {
  const error = message.rpcError;
  return {
    method: message.method,
    rpcId: message.id,
    params: slot === 'request' && full ? asJsonObject(message.params) : undefined,
    result: slot === 'final' && full ? asJsonObject(message.result) : undefined,
    error: slot === 'final' && error ? { code: int(error.code), message: text(error.message) ?? 'error', data: error.data } : undefined,
    isAction: MCP_ACTIONS.has(message.method) ? (true as const) : undefined,
  };
}

/** One exchange's event for its phase: the request as sent, or the response (or denial) that ended it. */
export function httpEvent(sessionId: string, row: Row, slot: EventPhaseSlot, mcp?: McpMessage, full = true): SessionEvent {
  const denied = row.decision === 'denied';
  const status = httpStatus(row.status_code);
  const request = slot === 'request';
  return {
    ...base(sessionId, row, 'http', request ? 'request' : denied ? 'denied' : 'response', slot, String(row.event_id)),
    host: hostOf(String(row.domain), int(row.port), text(row.conn_type)),
    statusCode: request ? undefined : status,
    durationMs: request ? undefined : amount(row.duration_ms),
    // A denial never reached an upstream: there are no response headers to time.
    ttfbMs: request || denied ? undefined : amount(row.ttfb_ms),
    bytesUp: request ? amount(row.bytes_sent) : undefined,
    bytesDown: request ? undefined : amount(row.bytes_received),
    httpMethod: text(row.method),
    httpPath: decodedPath(text(row.path)),
    process: processOf(row),
    client: clientOf(row),
    ...agentOf(row),
    invocations: request || denied ? invocationsOf(row, mcp ? 'mcp' : 'http') : undefined,
    decision: text(row.decision),
    matchedRule: text(row.matched_rule),
    mcp: mcp ? mcpView(mcp, slot, full) : undefined,
    error: request ? undefined : errorOf(text(row.error_kind), text(row.error_message), status),
  };
}

export interface ModelCallContext {
  /** false for the summary view, which sends counts in place of the request's lists. */
  readonly full: boolean;
  /** The request body as sent: read for a full request event only. */
  readonly requestBody?: unknown;
  /** The calls the response asked for: read for a full response event only. */
  readonly toolCalls: readonly Row[];
  /** The results the request carried, where its body gives none: for a full request event only. */
  readonly toolResults: readonly Row[];
}

/** Token counts by kind, with the presentKinds bitmask (input 1, cache read 2, cache write 4, output 8, reasoning 16). */
function tokens(row: Row): Partial<Inference> {
  const usage = (lenientJson(row.usage_details) ?? {}) as Record<string, unknown>;
  const input = amount(row.input_tokens);
  const output = amount(row.output_tokens);
  const cacheRead = amount(usage.cache_read);
  const cacheWrite = amount(usage.cache_write);
  const reasoning = amount(usage.thinking ?? usage.reasoning);
  const kinds = [input, cacheRead, cacheWrite, output, reasoning];
  const presentKinds = kinds.reduce<number>((mask, v, i) => (v === undefined ? mask : mask | (1 << i)), 0);
  const prompt =
    input === undefined && cacheRead === undefined && cacheWrite === undefined
      ? undefined
      : (input ?? 0) + (cacheRead ?? 0) + (cacheWrite ?? 0);
  return {
    inputTokens: input,
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    outputTokens: output,
    reasoningTokens: reasoning,
    presentKinds: presentKinds === 0 ? undefined : presentKinds,
    promptTokens: prompt,
    completionTokens: output,
    totalTokens: prompt === undefined && output === undefined ? undefined : (prompt ?? 0) + (output ?? 0),
  };
}

/** What the request asked the model: the conversation, the tools, the settings, read in the wire format it was recorded in. */
function requestInference(row: Row, context: ModelCallContext): Partial<Inference> {
  if (!context.full) return { messageCount: amount(row.messages_count) || undefined, toolCount: amount(row.tools_count) || undefined };
  const view = requestViewOfCall(row, context.requestBody ?? {});
  const recorded: ToolResultView[] = context.toolResults.map((r) => ({
    toolUseId: String(r.call_id),
    content: text(r.content) ?? text(r.content_preview) ?? '',
    isError: int(r.is_error) === 1 ? true : undefined,
  }));
  return {
    messages: view.messages,
    // A schema that is not an object (the agent's to send) is left out: Go holds parameters as a map.
    tools: view.tools.map((tool) => ({ ...tool, parameters: isObject(tool.parameters) ? tool.parameters : undefined })),
    toolChoice: view.toolChoice,
    historyToolCalls: view.historyToolCalls,
    toolResults: view.toolResults.length > 0 ? view.toolResults : recorded,
    temperature: view.temperature,
    maxTokens: amount(view.maxTokens),
    topP: view.topP,
  };
}

/** What the model answered: its text, its tool calls, its tokens and their cost. */
function responseInference(row: Row, context: ModelCallContext): Partial<Inference> {
  const toolCalls: ToolCallView[] = context.toolCalls.map((t) => ({
    id: String(t.call_id),
    name: String(t.tool_name),
    arguments: text(t.arguments) ?? '{}',
  }));
  return {
    toolCalls: context.full ? toolCalls : undefined,
    streamedResponse: int(row.stream) === 1,
    completion: text(row.text_content),
    thinking: text(row.thinking_content),
    finishReason: text(row.stop_reason),
    messageId: text(row.message_id),
    ...tokens(row),
    costUsd: typeof row.estimated_cost_usd === 'number' ? row.estimated_cost_usd : undefined,
  };
}

/** A model call's exchange for its phase, with the inference fields the spec puts on that phase. */
export function modelEvent(sessionId: string, row: Row, context: ModelCallContext, slot: EventPhaseSlot): SessionEvent {
  const provider = String(row.provider);
  const path = String(row.path);
  const status = httpStatus(row.status_code);
  const request = slot === 'request';
  const exchange = text(row.net_event_id) ?? String(row.event_id);
  const inference: Inference = {
    provider,
    model: text(row.model),
    ...(request ? requestInference(row, context) : responseInference(row, context)),
    stream: request && int(row.stream) === 1 ? (true as const) : undefined,
    isAction: true as const,
  };
  return {
    ...base(sessionId, row, 'model', request ? 'request' : 'response', slot, exchange),
    host: text(row.host) ?? providerNamed(provider)?.hosts[0],
    statusCode: request ? undefined : status,
    durationMs: request ? undefined : amount(row.duration_ms),
    ttfbMs: request ? undefined : amount(row.ttfb_ms),
    bytesUp: request ? amount(row.request_bytes) : undefined,
    bytesDown: request ? undefined : amount(row.response_bytes),
    httpMethod: text(row.method),
    httpPath: decodedPath(path),
    process: processOf(row),
    client: clientOf(row),
    ...agentOf(row),
    invocations: request ? invocationsOf(row, 'inference') : undefined,
    inference,
    error: request
      ? undefined
      : (errorOf(text(row.error_kind), text(row.error_message), status) ??
        (status !== undefined && status >= 400
          ? { kind: 'upstream_error', message: `the model API answered ${status}`, code: String(status) }
          : undefined)),
  };
}

export interface ToolContext {
  readonly modelCallSeq?: number;
}

/** A call points at the response that asked for it, a result at the request that carried it back. */
const modelSeq = (rowSeq: number | undefined, slot: EventPhaseSlot): number | undefined =>
  rowSeq === undefined ? undefined : wireSeqOf(rowSeq, slot);

/** A tool call the model asked for: one event, in the slot after the response that carried it. */
export function toolCallEvent(sessionId: string, row: Row, context: ToolContext): SessionEvent {
  const error = text(row.error_message);
  return {
    ...base(sessionId, row, 'tool_call', row.decision === 'denied' ? 'denied' : 'request', 'final'),
    durationMs: amount(row.duration_ms),
    process: processOf(row),
    decision: text(row.decision),
    matchedRule: text(row.policy_rule),
    tool: {
      callId: String(row.call_id),
      name: text(row.tool_name),
      origin: text(row.origin) ?? 'native',
      status: text(row.status),
      arguments: text(row.arguments),
      resultPreview: text(row.response_preview),
      modelCallSeq: modelSeq(context.modelCallSeq, 'final'),
    },
    error: error ? { kind: 'tool_error', message: error } : undefined,
  };
}

export function toolResultEvent(sessionId: string, row: Row, context: ToolContext): SessionEvent {
  return {
    ...base(sessionId, row, 'tool_result', 'response', 'final'),
    tool: {
      callId: String(row.call_id),
      resultPreview: text(row.content_preview),
      isError: int(row.is_error) === 1 ? true : undefined,
      modelCallSeq: modelSeq(context.modelCallSeq, 'request'),
    },
  };
}

export function fileEvent(sessionId: string, row: Row): SessionEvent {
  return {
    ...base(sessionId, row, 'file', 'response', 'final'),
    direction: undefined,
    file: { action: String(row.action), path: String(row.path), size: amount(row.size) },
  };
}

/** A JSON array of strings as stored by the recorder; anything else reads as empty. */
function stringList(value: unknown): string[] {
  const list = lenientJson(value);
  return Array.isArray(list) ? list.filter((v): v is string => typeof v === 'string') : [];
}

export function dnsEvent(sessionId: string, row: Row): SessionEvent {
  const denied = row.decision === 'denied';
  return {
    ...base(sessionId, row, 'dns', denied ? 'denied' : 'response', 'final'),
    host: String(row.name),
    durationMs: amount(row.duration_ms),
    process: processOf(row),
    decision: text(row.decision),
    matchedRule: text(row.matched_rule),
    dns: {
      name: String(row.name),
      type: String(row.type),
      rcode: String(row.rcode),
      answers: stringList(row.answers),
      resolved: stringList(row.resolved),
    },
    error: text(row.error_message) ? { kind: denied ? 'destination_denied' : 'dns_failed', message: String(row.error_message) } : undefined,
  };
}

/** Strict UTF-8 decode; a body that is not valid UTF-8 (every compressed body) goes as base64. */
function bodyField(body: Uint8Array | null | undefined): { text?: string; base64?: string } {
  if (!body) return {};
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(body) };
  } catch {
    return { base64: Buffer.from(body).toString('base64') };
  }
}

/** The captured bytes of an exchange, from its event_body_blobs rows and its net_events row: the request's on its request event, the response's on the other. */
export function rawCapture(netRow: Row | undefined, blobs: readonly Row[], slot: EventPhaseSlot): RawCapture | undefined {
  if (!netRow && blobs.length === 0) return undefined;
  if (slot === 'request') {
    const req = bodyField(blobs.find((b) => b.direction === 'request')?.body as Uint8Array | undefined);
    return {
      request: req.text,
      requestBase64: req.base64,
      requestHeaders: lenientJson(netRow?.request_headers),
      query: text(netRow?.query),
    };
  }
  const response = blobs.find((b) => b.direction === 'response');
  if (!netRow && !response) return undefined;
  const res = bodyField(response?.body as Uint8Array | undefined);
  return {
    response: {
      status: httpStatus(netRow?.status_code),
      headers: lenientJson(netRow?.response_headers),
      body: res.text,
      bodyBase64: res.base64,
      truncated: int(response?.truncated) === 1,
    },
  };
}
