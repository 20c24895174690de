import { arr, argsText, isObject, lenientJson, num, obj, str, type Json } from '../json.ts';
import { emptyResponse, errorOf, setUsage, type ModelResponse } from '../modelResponse.ts';
import { emptyView, message, settings, textOf, turn, type RequestView } from '../requestView.ts';
import type { SseEvent } from '../sse.ts';
import type { WireFormat } from './wire.ts';

// OpenAI's Responses API, at /v1/responses or bare behind a base URL that already ends in /v1.

function responsesRequest(body: Json): RequestView {
  const view = emptyView();
  if (typeof body.instructions === 'string') {
    view.messages.push(message('system', body.instructions));
    view.turns.push(turn('system', body.instructions));
  }
  if (typeof body.input === 'string') {
    view.messages.push(message('user', body.input));
    view.turns.push(turn('user', body.input));
  }
  for (const item of arr(body.input)) {
    if (!isObject(item)) continue;
    const type = str(item.type) ?? 'message';
    const last = view.turns.at(-1);
    if (type === 'function_call') {
      const call = { id: str(item.call_id) ?? '', name: str(item.name) ?? '', arguments: argsText(item.arguments) };
      view.historyToolCalls.push(call);
      view.messages.push(message('assistant', '', { toolCallNames: call.name, toolUseIds: call.id }));
      // Calls made side by side come as consecutive items: one assistant turn.
      const turnCall = { id: call.id || null, name: call.name, arguments: call.arguments };
      if (last?.role === 'assistant' && last.calls.length > 0 && last.results.length === 0) last.calls.push(turnCall);
      else view.turns.push(turn('assistant', '', [turnCall]));
    } else if (type === 'function_call_output') {
      // The output is a string or content parts, with no mark for a call that failed.
      const id = str(item.call_id) ?? '';
      view.toolResults.push({ toolUseId: id, content: textOf(item.output) });
      view.messages.push(message('tool', item.output, { toolUseIds: id, toolUseId: id }));
      view.turns.push(turn('tool', '', [], [{ id: id || null, name: null, content: textOf(item.output), isError: false }]));
    } else if (type === 'message') {
      view.messages.push(message(str(item.role) ?? 'user', item.content));
      view.turns.push(turn(str(item.role) ?? 'user', item.content));
    }
  }
  for (const t of arr(body.tools)) {
    if (isObject(t)) view.tools.push({ name: str(t.name) ?? str(t.type) ?? '', description: str(t.description), parameters: t.parameters });
  }
  return settings(view, {
    temperature: body.temperature,
    maxTokens: body.max_output_tokens,
    topP: body.top_p,
    stream: body.stream,
    toolChoice: body.tool_choice,
  });
}

function responsesUsage(out: ModelResponse, usage: unknown): void {
  const u = obj(usage);
  setUsage(out, {
    prompt: num(u.input_tokens),
    cached: num(obj(u.input_tokens_details).cached_tokens),
    output: num(u.output_tokens),
    reasoning: num(obj(u.output_tokens_details).reasoning_tokens),
  });
}

function responsesJson(body: Json, streamed = false): ModelResponse {
  const out = emptyResponse(streamed);
  out.complete = true;
  out.model = str(body.model);
  out.messageId = str(body.id);
  out.stopReason = str(body.status);
  for (const item of arr(body.output).filter(isObject)) {
    if (item.type === 'message') {
      for (const part of arr(item.content).filter(isObject)) if (part.type === 'output_text') out.text += str(part.text) ?? '';
    } else if (item.type === 'function_call') {
      out.toolCalls.push({ id: str(item.call_id) ?? str(item.id) ?? '', name: str(item.name) ?? '', arguments: argsText(item.arguments) });
    } else if (item.type === 'reasoning') {
      for (const part of arr(item.summary).filter(isObject)) out.thinking += str(part.text) ?? '';
    }
  }
  if (out.toolCalls.length > 0 && out.stopReason === 'completed') out.stopReason = 'tool_calls';
  responsesUsage(out, body.usage);
  if (body.error) out.error = errorOf(body);
  return out;
}

function responsesStream(events: SseEvent[]): ModelResponse {
  let last: Json | undefined;
  const partial = emptyResponse(true);
  for (const e of events) {
    const d = obj(lenientJson(e.data));
    const type = str(d.type) ?? e.event;
    if (type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') last = obj(d.response);
    else if (type === 'response.created') partial.model = str(obj(d.response).model);
    else if (type === 'response.output_text.delta') partial.text += str(d.delta) ?? '';
    else if (type === 'response.output_item.done') {
      const item = obj(d.item);
      if (item.type === 'function_call')
        partial.toolCalls.push({ id: str(item.call_id) ?? '', name: str(item.name) ?? '', arguments: argsText(item.arguments) });
    } else if (type === 'error') partial.error = errorOf(d) ?? str(d.message) ?? 'stream error';
  }
  return last ? responsesJson(last, true) : partial;
}

export const openaiResponses: WireFormat = {
  id: 'openai-responses',
  path: /^(?:\/v1)?\/responses$/,
  request: responsesRequest,
  response: { stream: responsesStream, json: (body) => responsesJson(obj(body)) },
};
