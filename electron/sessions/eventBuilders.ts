import type { Inference, RawCapture, SessionEvent, ToolCallView, ToolResultView } from '../contract/sessionEvent.ts';
import { hostOf } from '../telemetry/hosts.ts';
import { providerNamed, requestView } from '../telemetry/providers/index.ts';
import { lenientJson } from '../telemetry/json.ts';

// Rows in, wire events out: pure functions, so the wire form is pinned by a golden file without
// a database. Unknown fields are left undefined, which JSON leaves out: absent stays absent on
// the wire and nothing unknown is sent as zero.

export type Row = Record<string, unknown>;

export const text = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);
export const int = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'bigint' ? Number(v) : undefined);

function decodedPath(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  const bare = path.split('?')[0]!;
  try {
    return decodeURIComponent(bare);
  } catch {
    return bare;
  }
}

function base(sessionId: string, row: Row, kind: SessionEvent['kind'], phase: SessionEvent['phase'], direction: SessionEvent['direction'] = 'outbound'): SessionEvent {
  return ({
    sessionId,
    seq: int(row.seq)!,
    at: String(row.timestamp),
    kind,
    direction,
    phase,
    eventId: String(row.event_id),
    traceId: text(row.trace_id),
    turnId: text(row.turn_id),
  });
}

function processOf(row: Row): SessionEvent['process'] {
  const name = text(row.process_name);
  const pid = int(row.pid);
  return name === undefined && pid === undefined ? undefined : ({ name, pid });
}

export function httpEvent(sessionId: string, row: Row): SessionEvent {
  const denied = row.decision === 'denied';
  const status = int(row.status_code);
  const errorKind = text(row.error_kind);
  return ({
    ...base(sessionId, row, 'http', denied ? 'denied' : status === undefined ? 'request' : 'response'),
    host: hostOf(String(row.domain), int(row.port), text(row.conn_type)),
    statusCode: status,
    durationMs: int(row.duration_ms),
    ttfbMs: int(row.ttfb_ms),
    bytesUp: int(row.bytes_sent),
    bytesDown: int(row.bytes_received),
    httpMethod: text(row.method),
    httpPath: decodedPath(text(row.path)),
    process: processOf(row),
    decision: text(row.decision),
    matchedRule: text(row.matched_rule),
    error: errorKind ? { kind: errorKind, message: text(row.error_message) ?? errorKind } : undefined,
  });
}

export interface ModelCallContext {
  /** The request body as sent, when the full view is wanted; omit for the summary view. */
  readonly requestBody?: unknown;
  readonly toolCalls: readonly Row[];
  readonly toolResults: readonly Row[];
}

/** Token counts by kind, with the presentKinds bitmask (input 1, cache read 2, cache write 4, output 8, reasoning 16). */
function tokens(row: Row): Partial<Inference> {
  const usage = (lenientJson(row.usage_details) ?? {}) as Record<string, unknown>;
  const input = int(row.input_tokens);
  const output = int(row.output_tokens);
  const cacheRead = int(usage.cache_read);
  const cacheWrite = int(usage.cache_write);
  const reasoning = int(usage.thinking ?? usage.reasoning);
  const kinds = [input, cacheRead, cacheWrite, output, reasoning];
  const presentKinds = kinds.reduce<number>((mask, v, i) => (v === undefined ? mask : mask | (1 << i)), 0);
  const prompt = input === undefined && cacheRead === undefined && cacheWrite === undefined ? undefined : (input ?? 0) + (cacheRead ?? 0) + (cacheWrite ?? 0);
  return ({
    inputTokens: input,
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    outputTokens: output,
    reasoningTokens: reasoning,
    presentKinds: presentKinds === 0 ? undefined : presentKinds,
    promptTokens: prompt,
    completionTokens: output,
    totalTokens: prompt === undefined && output === undefined ? undefined : (prompt ?? 0) + (output ?? 0),
  });
}

export function modelEvent(sessionId: string, row: Row, context: ModelCallContext): SessionEvent {
  const provider = String(row.provider);
  const path = String(row.path);
  const status = int(row.status_code);
  const full = context.requestBody !== undefined;
  const view = full ? requestView(provider, path, context.requestBody) : undefined;
  const toolCalls: ToolCallView[] = context.toolCalls.map((t) => ({ id: String(t.call_id), name: String(t.tool_name), arguments: text(t.arguments) ?? '{}' }));
  const toolResults: ToolResultView[] = context.toolResults.map((r) =>
    ({ toolUseId: String(r.call_id), content: text(r.content) ?? text(r.content_preview) ?? '', isError: int(r.is_error) === 1 ? true : undefined }),
  );
  const inference: Inference = ({
    provider,
    model: text(row.model),
    ...(view
      ? {
          messages: view.messages,
          tools: view.tools,
          toolChoice: view.toolChoice,
          historyToolCalls: view.historyToolCalls,
          temperature: view.temperature,
          maxTokens: view.maxTokens,
          topP: view.topP,
        }
      : {}),
    toolResults: full ? (view!.toolResults.length > 0 ? view!.toolResults : toolResults) : undefined,
    toolCalls: full ? toolCalls : undefined,
    stream: int(row.stream) === 1 ? (true as const) : undefined,
    streamedResponse: int(row.stream) === 1,
    completion: text(row.text_content),
    thinking: text(row.thinking_content),
    finishReason: text(row.stop_reason),
    messageId: text(row.message_id),
    ...tokens(row),
    costUsd: typeof row.estimated_cost_usd === 'number' ? row.estimated_cost_usd : undefined,
    // The summary view keeps the counts the recorder stored instead of the lists it drops.
    messageCount: full ? undefined : int(row.messages_count) || undefined,
    toolCount: full ? undefined : int(row.tools_count) || undefined,
    isAction: true as const,
  });
  return ({
    ...base(sessionId, row, 'model', 'response'),
    host: text(row.host) ?? providerNamed(provider)?.host,
    statusCode: status,
    durationMs: int(row.duration_ms),
    bytesUp: int(row.request_bytes),
    bytesDown: int(row.response_bytes),
    httpMethod: text(row.method),
    httpPath: decodedPath(path),
    process: processOf(row),
    inference,
    error: status !== undefined && status >= 400 ? { kind: 'upstream_error', message: `the model API answered ${status}` } : undefined,
  });
}

export interface ToolContext {
  readonly full: boolean;
  readonly modelCallSeq?: number;
}

export function toolCallEvent(sessionId: string, row: Row, context: ToolContext): SessionEvent {
  const origin = text(row.origin) ?? 'native';
  const error = text(row.error_message);
  const mcp = origin === 'mcp';
  return ({
    ...base(sessionId, row, 'tool_call', row.decision === 'denied' ? 'denied' : 'request'),
    durationMs: int(row.duration_ms),
    bytesUp: int(row.bytes_sent),
    bytesDown: int(row.bytes_received),
    process: processOf(row),
    decision: text(row.decision),
    matchedRule: text(row.policy_rule),
    tool: ({
      callId: String(row.call_id),
      name: text(row.tool_name),
      origin,
      status: text(row.status),
      arguments: text(row.arguments),
      resultPreview: text(row.response_preview),
      modelCallSeq: context.modelCallSeq,
    }),
    mcp: mcp
      ? ({
          method: text(row.method) ?? 'tools/call',
          rpcId: text(row.request_id),
          server: text(row.server_name),
          params: context.full ? { name: text(row.tool_name), arguments: lenientJson(row.arguments) ?? text(row.arguments) } : undefined,
          result: context.full ? text(row.response_preview) : undefined,
          error: error ? { message: error } : undefined,
          isAction: true as const,
        })
      : undefined,
    error: error ? { kind: 'tool_error', message: error } : undefined,
  });
}

export function toolResultEvent(sessionId: string, row: Row, context: ToolContext): SessionEvent {
  return ({
    ...base(sessionId, row, 'tool_result', 'response'),
    tool: ({
      callId: String(row.call_id),
      resultPreview: text(row.content_preview),
      isError: int(row.is_error) === 1 ? true : undefined,
      modelCallSeq: context.modelCallSeq,
    }),
  });
}

export function fileEvent(sessionId: string, row: Row): SessionEvent {
  return ({
    ...base(sessionId, row, 'file', 'response', 'local'),
    file: ({ action: String(row.action), path: String(row.path), size: int(row.size) }),
  });
}

/** A JSON array of strings as stored by the recorder; anything else reads as empty. */
function stringList(value: unknown): string[] {
  const list = lenientJson(value);
  return Array.isArray(list) ? list.filter((v): v is string => typeof v === 'string') : [];
}

export function dnsEvent(sessionId: string, row: Row): SessionEvent {
  const denied = row.decision === 'denied';
  return ({
    ...base(sessionId, row, 'dns', denied ? 'denied' : 'response'),
    host: String(row.name),
    durationMs: int(row.duration_ms),
    process: processOf(row),
    decision: text(row.decision),
    matchedRule: text(row.matched_rule),
    dns: ({ name: String(row.name), type: String(row.type), rcode: String(row.rcode), answers: stringList(row.answers), resolved: stringList(row.resolved) }),
    error: text(row.error_message) ? { kind: denied ? 'destination_denied' : 'dns_failed', message: String(row.error_message) } : undefined,
  });
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

/** The captured bytes of an exchange, from its event_body_blobs rows and its net_events row. */
export function rawCapture(netRow: Row | undefined, blobs: readonly Row[]): RawCapture | undefined {
  if (!netRow && blobs.length === 0) return undefined;
  const request = blobs.find((b) => b.direction === 'request');
  const response = blobs.find((b) => b.direction === 'response');
  const req = bodyField(request?.body as Uint8Array | undefined);
  const res = bodyField(response?.body as Uint8Array | undefined);
  return ({
    request: req.text,
    requestBase64: req.base64,
    requestHeaders: lenientJson(netRow?.request_headers),
    query: text(netRow?.query),
    response:
      netRow || response
        ? ({
            status: int(netRow?.status_code),
            headers: lenientJson(netRow?.response_headers),
            body: res.text,
            bodyBase64: res.base64,
            truncated: int(response?.truncated) === 1,
          })
        : undefined,
  });
}
