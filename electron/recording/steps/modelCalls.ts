import { createHash, randomBytes } from 'node:crypto';
import type { Exchange } from '../../proxy/exchange.ts';
import type { RecordedCall, ToolLedger } from '../../proxy/toolLedger.ts';
import { hostOf } from '../../telemetry/hosts.ts';
import { priceUnder } from '../../telemetry/pricing.ts';
import type { ModelResponse } from '../../telemetry/modelResponse.ts';
import type { ModelApi } from '../../telemetry/providers/index.ts';
import { LOCAL_PRICE, UNPRICED } from '../../telemetry/providers/provider.ts';
import { parseModelResponse, wireRequestView } from '../../telemetry/wire/index.ts';
import { promptOf } from '../../telemetry/requestView.ts';
import { conversationLinks, type CarriedResult } from '../../telemetry/toolLinks.ts';
import { credentialRefOf, header, preview, PREVIEW } from './exchangeFacts.ts';
import { writesTo, type ExchangeRows, type ExchangeStep, type RowSink } from './step.ts';

// A model API call's ledger, as the spec defines it: its model_calls row, the items of its
// conversation (model_items), the tool calls the model asked for (tool_calls) and the results the
// request carried back (tool_responses). The one place an exchange is recognised as a model call.

const newTraceId = (): string => randomBytes(8).toString('hex');

type Carried = readonly { readonly result: CarriedResult; readonly call: RecordedCall | null }[];

export const modelCalls: ExchangeStep = {
  name: 'model-calls',
  handles: 'exchange',
  reads: "a model API's request and response bodies, in its provider's wire format",
  writes: ['net_events', 'model_calls', 'model_items', 'tool_calls', 'tool_responses'],
  description:
    'Parses a model API call out of the exchange: model, prompt, answer, reasoning, tokens and cost, the tool calls the model asked for and the results sent back; a trace joins a call to the calls whose results it carries',
  capabilities: ['body.read'],
  actions: ['observe'],
  readsBody: true,
  config: writesTo(['model_calls', 'model_items', 'tool_calls', 'tool_responses']),
  record: (facts, state) => {
    const { ex } = facts;
    const api = ex.kind === 'request' && ex.decision === 'allowed' ? state.providers().detect(ex.host, ex.port, ex.scheme, ex.path) : null;
    if (!api) return {};
    facts.claimedBy = 'model-calls';
    const requestJson = facts.requestJson();
    const view = wireRequestView(api.wire, requestJson);
    const links = conversationLinks(view.turns);
    const carried = links.results.map((result) => ({ result, call: state.tools.callOf(result) }));
    // Nothing came back to make a call of; the trace on its row says it was one, for readers that never detect again.
    if (ex.status === null) {
      facts.modelCall = { request: view, links, carried, toolCalls: [] };
      const trace = newTraceId();
      return { columns: { trace_id: trace, turn_id: trace } };
    }
    const parsed = parseModelResponse(api, header(ex.responseHeaders, 'content-type'), facts.response.bytes);
    facts.modelCall = { request: view, links, carried, toolCalls: parsed.toolCalls };
    // A model call continues the trace of the calls its results answer.
    const trace = carried.map((c) => c.call?.trace).find((t) => t !== undefined) ?? newTraceId();
    const rows = modelCallRows(ex, api, view, requestJson, preview(facts.request.bytes), parsed, trace, links.prefix, carried, state.tools);
    state.lastTrace = trace;
    return { columns: { trace_id: trace, turn_id: trace }, rows };
  },
};

function modelCallRows(
  ex: Exchange,
  api: ModelApi,
  view: ReturnType<typeof wireRequestView>,
  requestJson: unknown,
  requestPreview: string | null,
  parsed: ModelResponse,
  trace: string,
  conversation: string,
  carried: Carried,
  tools: ToolLedger,
): ExchangeRows['rows'] {
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
  return (eventId: string, sink: RowSink) => {
    const call = sink.append('model_calls', {
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
      sink.append('model_items', {
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
      if (!tools.firstCarried(result, answered)) continue;
      const callId = answered?.callId ?? result.providerId ?? `${result.name ?? result.answers?.name ?? 'tool'}#unmatched`;
      const contentPreview = result.content.slice(0, PREVIEW);
      sink.append('tool_responses', {
        ...identity,
        credential_ref: credentialRef,
        timestamp: at,
        model_call_id: call.id,
        call_id: callId,
        content_preview: contentPreview,
        is_error: result.isError ? 1 : 0,
      });
      item('tool_response', { call_id: callId, content: result.content });
      if (answered) sink.answerToolCall(answered.callId, contentPreview, result.isError);
    }
    item('request', { content: prompt });
    if (parsed.thinking) item('reasoning', { content: parsed.thinking });
    if (parsed.text) item('response', { content: parsed.text });
    const made = parsed.toolCalls.map((tool, index) => {
      // A call the provider gave no id (Gemini, Ollama) gets one unique in the session: its place and its exchange.
      const callId = tool.id !== '' ? tool.id : `${tool.name || 'tool'}#${index}@${eventId}`;
      sink.append('tool_calls', {
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
    tools.remember(conversation, made);
  };
}
