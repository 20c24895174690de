import { createHash, randomBytes } from 'node:crypto';
import { STAND_IN_ELSEWHERE_RULE } from '../credentials/credentialBroker.ts';
import type { SessionWriter } from '../store/sessionWriter.ts';
import { decodeBody, plainBody, type DecodedBody } from '../telemetry/decodeBody.ts';
import { parseMcpExchange } from '../telemetry/mcp.ts';
import { BUILT_IN_TABLE, type ModelApi, type ProviderTable } from '../telemetry/providers/index.ts';
import { LOCAL_PRICE, UNPRICED } from '../telemetry/providers/provider.ts';
import { parseModelResponse, wireRequestView } from '../telemetry/wire/index.ts';
import { promptOf } from '../telemetry/requestView.ts';
import { priceUnder } from '../telemetry/pricing.ts';
import { hostOf } from '../telemetry/hosts.ts';
import { recordedHeaders, type Exchange } from './exchange.ts';
import { lenientJson } from '../telemetry/json.ts';
import { conversationLinks, type CarriedResult } from '../telemetry/toolLinks.ts';
import type { FrameRow } from '../telemetry/upgradedStream.ts';
import { ToolLedger, type RecordedCall } from './toolLedger.ts';

// Turns each finished exchange into the session's rows: one net_events row, its bodies (decoded)
// in event_body_blobs, and for model API calls the ledger the spec defines (model_calls,
// model_items, tool_calls, tool_responses), with MCP tools/call as tool_calls of origin mcp.

const PREVIEW = 256;

const newTraceId = (): string => randomBytes(8).toString('hex');

function header(headers: Exchange['requestHeaders'] | Exchange['responseHeaders'], name: string): string | undefined {
  const value = headers?.[name];
  return Array.isArray(value) ? value.join(', ') : value === undefined ? undefined : String(value);
}

/** The key a request used, as the ledger names it: the one substituted, else the first whose stand-in it carried. */
function credentialRefOf(ex: Exchange): string | null {
  const uses = ex.credentials ?? [];
  return (uses.find((u) => u.outcome === 'substituted') ?? uses[0])?.credentialRef ?? null;
}

function preview(bytes: Buffer): string | null {
  if (bytes.length === 0) return null;
  const text = bytes.subarray(0, PREVIEW * 4).toString('utf8');
  return text.includes('\uFFFD') && !/^[\s{["]/.test(text) ? `<${bytes.length} bytes of binary>` : text.slice(0, PREVIEW);
}

export class ExchangeRecorder {
  /** The session's tool calls: which call a result answers, in which trace, and whether it was recorded already. */
  private readonly tools = new ToolLedger();
  private lastTrace: string | null = null;
  private readonly mcpServers = new Map<string, string>();
  failures = 0;
  lastFailure: string | null = null;

  constructor(
    private readonly writer: SessionWriter,
    private readonly bodyCap: number,
    /** The providers as the policy now declares them (it reloads): which requests are model calls, whose, and how priced. */
    private readonly providers: () => ProviderTable = () => BUILT_IN_TABLE,
  ) {}

  /** Exchanges are recorded in the order they finished, even though decoding is asynchronous. */
  private queue: Promise<void> = Promise.resolve();
  /** Exchanges in the queue, waiting for their bodies to be decoded. */
  private waiting = 0;

  record(ex: Exchange): Promise<void> {
    const requestCoding = header(ex.requestHeaders, 'content-encoding');
    const responseCoding = header(ex.responseHeaders, 'content-encoding');
    const request = plainBody(ex.requestBody.bytes, requestCoding);
    const response = plainBody(ex.responseBody.bytes, responseCoding);
    // Nothing to decode and nobody ahead: recorded at once, without a turn through the queue.
    if (request && response && this.waiting === 0) {
      try {
        this.write(ex, request, response);
      } catch (err) {
        this.lost(err);
      }
      return this.queue;
    }
    this.waiting += 1;
    this.queue = this.queue.then(async () => {
      try {
        const decoded = await Promise.all([
          request ?? decodeBody(ex.requestBody.bytes, requestCoding, this.bodyCap),
          response ?? decodeBody(ex.responseBody.bytes, responseCoding, this.bodyCap),
        ]);
        this.write(ex, ...decoded);
      } catch (err) {
        this.lost(err);
      } finally {
        this.waiting -= 1;
      }
    });
    return this.queue;
  }

  /** Resolves once every exchange handed over so far is in the writer's queue. */
  settled(): Promise<void> {
    return this.queue;
  }

  /** Counted and kept in session_meta at close: `capsem check` reports a session with losses. */
  private lost(err: unknown): void {
    this.failures += 1;
    this.lastFailure = err instanceof Error ? err.message : String(err);
  }

  /**
   * Record first, interpret second: every parser runs inside `interpret`, whose failure costs only
   * the derived rows (model call, items, tools, MCP) and is kept as the row's parse_error. The
   * exchange's own row and its bodies are written whatever the parsers make of them.
   */
  private write(ex: Exchange, request: DecodedBody, response: DecodedBody): void {
    let interpretation: Interpretation = NOTHING_DERIVED;
    let parseError = ex.parseError;
    try {
      interpretation = this.interpret(ex, request, response);
    } catch (err) {
      parseError = [parseError, `recording this exchange's model or tool rows failed: ${err instanceof Error ? err.message : String(err)}`]
        .filter(Boolean)
        .join('; ');
    }
    const at = ex.startedAt.toISOString();
    const net = this.writer.append('net_events', {
      event_id: ex.eventId,
      trace_id: interpretation.trace,
      turn_id: interpretation.trace,
      timestamp: at,
      domain: ex.host,
      port: ex.port,
      decision: ex.decision,
      process_name: ex.processName,
      pid: ex.pid,
      method: ex.method,
      path: ex.path,
      query: ex.query,
      status_code: ex.status,
      bytes_sent: ex.requestBody.total,
      bytes_received: ex.responseBody.total,
      duration_ms: ex.durationMs,
      ttfb_ms: ex.ttfbMs,
      matched_rule: ex.matchedRule,
      request_headers: JSON.stringify(recordedHeaders(ex.requestHeaders)),
      response_headers: ex.responseHeaders ? JSON.stringify(recordedHeaders(ex.responseHeaders)) : null,
      request_body_preview: preview(request.bytes),
      response_body_preview: preview(response.bytes),
      conn_type: ex.kind === 'websocket' ? 'websocket' : ex.scheme,
      error_kind: ex.error?.kind ?? (response.error ? 'decode_error' : null),
      error_message: ex.error?.message ?? response.error ?? null,
      parse_error: parseError,
      credential_ref: credentialRefOf(ex),
    });
    if (!net) return;
    const eventId = net.eventId!;
    interpretation.write(eventId);
    this.credentialRows(ex, eventId, at);
    // Last: the bodies' memory is handed to the writer thread, after every use of it here.
    for (const [direction, captured, decoded, headers] of [
      ['request', ex.requestBody, request, ex.requestHeaders],
      ['response', ex.responseBody, response, ex.responseHeaders],
    ] as const) {
      if (captured.total === 0 || decoded.bytes.length === 0) continue;
      this.writer.append(
        'event_body_blobs',
        {
          event_id: eventId,
          source_table: 'net_events',
          direction,
          content_type: header(headers, 'content-type') ?? null,
          content_encoding: header(headers, 'content-encoding') ?? null,
          original_bytes: captured.total,
          stored_bytes: decoded.bytes.length,
          truncated: captured.truncated || decoded.truncated ? 1 : 0,
          body: decoded.bytes,
          created_at: at,
        },
        { handOver: true },
      );
    }
  }

  /**
   * What the credential broker did on this exchange: a substitution_events row per stand-in seen,
   * and for one seen away from its provider's hosts a security_rule_events row too (which
   * provider's stand-in, which host, which process), refused or let through by the policy.
   */
  private credentialRows(ex: Exchange, eventId: string, at: string): void {
    for (const use of ex.credentials ?? []) {
      this.writer.append('substitution_events', {
        net_event_id: eventId,
        timestamp: at,
        provider: use.provider,
        location: use.where,
        host: use.host,
        outcome: use.outcome,
        credential_ref: use.credentialRef,
        process_name: ex.processName,
        pid: ex.pid,
      });
      if (use.outcome === 'substituted') continue;
      this.writer.append('security_rule_events', {
        event_id: eventId,
        timestamp: at,
        timestamp_unix_ms: ex.startedAt.getTime(),
        event_type: 'credential.stand_in_elsewhere',
        rule_id: STAND_IN_ELSEWHERE_RULE,
        rule_action: use.outcome === 'refused' ? 'deny' : 'allow',
        detection_level: 'high',
        event_json: JSON.stringify({
          provider: use.provider,
          where: use.where,
          host: use.host,
          port: ex.port,
          process_name: ex.processName,
          pid: ex.pid,
          credential_ref: use.credentialRef,
        }),
      });
    }
  }

  /** Every parse an exchange gets, and the rows they yield, held until its own row has an id. */
  private interpret(ex: Exchange, request: DecodedBody, response: DecodedBody): Interpretation {
    const api =
      ex.kind === 'request' && ex.decision === 'allowed' && ex.status !== null
        ? this.providers().detect(ex.host, ex.port, ex.scheme, ex.path)
        : null;
    const requestJson = api || request.bytes[0] === 0x7b || request.bytes[0] === 0x5b ? lenientJson(request.bytes) : undefined;
    const view = api ? wireRequestView(api.wire, requestJson) : null;
    if (api && view) {
      const links = conversationLinks(view.turns);
      const carried = links.results.map((result) => ({ result, call: this.tools.callOf(result) }));
      // A model call continues the trace of the calls its results answer.
      const trace = carried.map((c) => c.call?.trace).find((t) => t !== undefined) ?? newTraceId();
      const write = this.modelCallRows(ex, api, view, requestJson, preview(request.bytes), response.bytes, trace, links.prefix, carried);
      this.lastTrace = trace;
      return { trace, write };
    }
    if (ex.decision === 'allowed' && requestJson !== undefined)
      return { trace: null, write: this.mcpRows(ex, requestJson, response.bytes) };
    return NOTHING_DERIVED;
  }

  /** An id for an exchange's row, taken before the exchange ends (its WebSocket frames are written under it meanwhile). */
  reserveEventId(): string {
    return this.writer.reserveEventId();
  }

  /** One frame of an upgraded connection, written as it passes. */
  frame(netEventId: string, row: FrameRow): void {
    try {
      this.writer.append('ws_frames', {
        net_event_id: netEventId,
        timestamp: row.at.toISOString(),
        direction: row.direction,
        opcode: row.opcode,
        fin: row.fin ? 1 : 0,
        size: row.size,
        stored_bytes: row.storedBytes,
        truncated: row.truncated ? 1 : 0,
        content: row.content,
        body: row.body,
      });
    } catch (err) {
      this.lost(err);
    }
  }

  private modelCallRows(
    ex: Exchange,
    api: ModelApi,
    view: ReturnType<typeof wireRequestView>,
    requestJson: unknown,
    requestPreview: string | null,
    responseBytes: Buffer,
    trace: string,
    conversation: string,
    carried: readonly { readonly result: CarriedResult; readonly call: RecordedCall | null }[],
  ): (eventId: string) => void {
    const parsed = parseModelResponse(api, header(ex.responseHeaders, 'content-type'), responseBytes);
    const ok = ex.status !== null && ex.status >= 200 && ex.status < 300;
    const requestModel =
      typeof (requestJson as { model?: unknown })?.model === 'string' ? (requestJson as { model: string }).model : undefined;
    // Model resolution: request body, then the stream or response JSON, then the URL path.
    const model = requestModel ?? parsed.model;
    const price = ok ? priceUnder(api.pricing, model, parsed, ex.startedAt) : { usd: 0, known: false };
    const at = ex.startedAt.toISOString();
    const identity = { trace_id: trace, turn_id: trace };
    const credentialRef = credentialRefOf(ex);
    const usage: Record<string, number | boolean | string> = {};
    if (parsed.cacheReadTokens !== undefined) usage.cache_read = parsed.cacheReadTokens;
    if (parsed.cacheWriteTokens !== undefined) usage.cache_write = parsed.cacheWriteTokens;
    if (parsed.reasoningTokens !== undefined) usage.thinking = parsed.reasoningTokens;
    if (!parsed.complete) usage.incomplete = true;
    // The provider's design, not a loss: `capsem check` tells the two apart by this mark.
    if (parsed.usageUnreported) usage.usage = 'unreported';
    // Who served it has no price, or runs locally: its zero cost is unknown or nothing, not a gap in the catalog (`capsem check` tells them apart by this mark).
    if (api.pricing === UNPRICED || api.pricing === LOCAL_PRICE) usage.pricing = api.pricing;
    const system = view.messages.find((m) => m.role === 'system');
    const prompt = promptOf(view);
    const usageDetails = JSON.stringify(usage);
    return (eventId) => {
      const call = this.writer.append('model_calls', {
        ...identity,
        credential_ref: credentialRef,
        net_event_id: eventId,
        host: hostOf(ex.host, ex.port, ex.scheme),
        timestamp: at,
        provider: api.provider,
        model: model ?? null,
        process_name: ex.processName,
        pid: ex.pid,
        method: ex.method,
        path: ex.path,
        stream: parsed.streamed ? 1 : 0,
        system_prompt_preview: system ? system.content.slice(0, PREVIEW) : null,
        messages_count: view.messages.length,
        tools_count: view.tools.length,
        request_bytes: ex.requestBody.total,
        // The decoded body, as on the net_events row: the wire bytes may be compressed.
        request_body_preview: requestPreview,
        message_id: parsed.messageId ?? null,
        status_code: ex.status,
        text_content: parsed.text || null,
        thinking_content: parsed.thinking || null,
        stop_reason: parsed.stopReason ?? null,
        input_tokens: ok ? (parsed.inputTokens ?? null) : null,
        output_tokens: ok ? (parsed.outputTokens ?? null) : null,
        duration_ms: ex.durationMs,
        response_bytes: ex.responseBody.total,
        estimated_cost_usd: price.usd,
        usage_details: usageDetails,
        wire: api.wire,
      });
      if (!call) return;
      let itemIndex = 0;
      const item = (
        kind: 'request' | 'reasoning' | 'response' | 'tool_call' | 'tool_response',
        fields: { content?: string | null; call_id?: string; tool_name?: string; arguments?: string },
      ): void => {
        const content = fields.content ?? fields.arguments ?? '';
        this.writer.append('model_items', {
          ...identity,
          timestamp: at,
          model_call_id: call.id,
          provider: api.provider,
          model: model ?? null,
          path: ex.path,
          kind,
          item_index: itemIndex++,
          call_id: fields.call_id ?? null,
          tool_name: fields.tool_name ?? null,
          arguments: fields.arguments ?? null,
          content: fields.content ?? null,
          content_hash: createHash('sha256').update(content).digest('hex').slice(0, 16),
        });
      };
      // Each result once, on the exchange that first carried it back: later requests re-send it as history.
      for (const { result, call: answered } of carried) {
        if (!this.tools.firstCarried(result, answered)) continue;
        const callId = answered?.callId ?? result.providerId ?? `${result.name ?? result.answers?.name ?? 'tool'}#unmatched`;
        const contentPreview = result.content.slice(0, PREVIEW);
        this.writer.append('tool_responses', {
          ...identity,
          credential_ref: credentialRef,
          timestamp: at,
          model_call_id: call.id,
          call_id: callId,
          content_preview: contentPreview,
          is_error: result.isError ? 1 : 0,
        });
        item('tool_response', { call_id: callId, content: result.content });
        if (answered) this.writer.answerToolCall(answered.callId, contentPreview, result.isError);
      }
      item('request', { content: prompt });
      if (parsed.thinking) item('reasoning', { content: parsed.thinking });
      if (parsed.text) item('response', { content: parsed.text });
      const made = parsed.toolCalls.map((tool, index) => {
        // A call the provider gave no id (Gemini, Ollama) gets one unique in the session: its place and its exchange.
        const callId = tool.id !== '' ? tool.id : `${tool.name || 'tool'}#${index}@${eventId}`;
        this.writer.append('tool_calls', {
          ...identity,
          credential_ref: credentialRef,
          timestamp: at,
          model_call_id: call.id,
          provider: api.provider,
          status: 'requested',
          call_index: index,
          call_id: callId,
          tool_name: tool.name,
          arguments: tool.arguments,
          origin: 'native',
          decision: 'allowed',
          process_name: ex.processName,
        });
        item('tool_call', { call_id: callId, tool_name: tool.name, arguments: tool.arguments });
        return { providerId: tool.id, recorded: { callId, trace } };
      });
      this.tools.remember(conversation, made);
    };
  }

  private mcpRows(ex: Exchange, requestJson: unknown, responseBytes: Buffer): (eventId: string) => void {
    const mcp = parseMcpExchange(requestJson, header(ex.responseHeaders, 'content-type'), responseBytes);
    if (mcp.length === 0) return NOTHING_DERIVED.write;
    const at = ex.startedAt.toISOString();
    const trace = this.lastTrace;
    const identity = { trace_id: trace, turn_id: trace };
    const server = `${ex.host}:${ex.port}`;
    const facts = mcp.map((message) => JSON.stringify(message.facts));
    return (eventId) => {
      mcp.forEach((message, index) => {
        if (message.serverName) this.mcpServers.set(server, message.serverName);
        let ruleEventId = eventId;
        if (message.method === 'tools/call') {
          const toolCall = this.writer.append('tool_calls', {
            ...identity,
            timestamp: at,
            model_call_id: null,
            provider: 'mcp',
            status: message.error ? 'error' : message.result !== undefined ? 'responded' : 'requested',
            call_index: 0,
            call_id: `mcp-${eventId}-${message.id ?? 'n'}`,
            tool_name: message.toolName ?? '(unnamed)',
            arguments: message.arguments ?? null,
            response_preview: message.resultText?.slice(0, PREVIEW) ?? null,
            origin: 'mcp',
            server_name: this.mcpServers.get(server) ?? server,
            method: message.method,
            request_id: message.id ?? null,
            decision: ex.decision,
            duration_ms: ex.durationMs,
            error_message: message.error ?? null,
            process_name: ex.processName,
            bytes_sent: ex.requestBody.total,
            bytes_received: ex.responseBody.total,
            policy_rule: ex.matchedRule,
          });
          ruleEventId = toolCall?.eventId ?? eventId;
        }
        this.writer.append('security_rule_events', {
          event_id: ruleEventId,
          ...identity,
          timestamp: at,
          timestamp_unix_ms: ex.startedAt.getTime(),
          event_type: message.method === 'tools/call' ? 'mcp.tool_call' : message.method === 'tools/list' ? 'mcp.tool_list' : 'mcp.event',
          rule_id: ex.matchedRule,
          rule_action: 'allow',
          detection_level: 'none',
          event_json: facts[index]!,
        });
      });
    };
  }
}

interface Interpretation {
  /** The trace a model call opens or continues; its exchange's row carries it too. */
  readonly trace: string | null;
  /** Appends the derived rows under the exchange's event id; appending is all it does. */
  readonly write: (eventId: string) => void;
}

const NOTHING_DERIVED: Interpretation = { trace: null, write: () => undefined };
