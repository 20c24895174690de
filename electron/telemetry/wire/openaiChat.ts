import { arr, argsText, isObject, lenientJson, num, obj, str, type Json } from '../json.ts';
import { emptyResponse, errorOf, setUsage, type ModelResponse, type ToolCallOut } from '../modelResponse.ts';
import { emptyView, message, settings, textOf, turn, type RequestView } from '../requestView.ts';
import type { SseEvent } from '../sse.ts';
import type { WireFormat } from './wire.ts';

// OpenAI's Chat Completions, at /v1/chat/completions or bare behind a base URL that already ends in
// /v1: the wire most providers and local servers speak. Its message shape is also Ollama's /api/chat.

/** OpenAI Chat Completions, and Ollama's /api/chat, which shares its message shape. */
export function chatRequest(body: Json, options: Json = {}): RequestView {
  const view = emptyView();
  for (const m of arr(body.messages)) {
    if (!isObject(m)) continue;
    const role = str(m.role) ?? 'user';
    const calls = arr(m.tool_calls).filter(isObject);
    const turnCalls = calls.map((c) => {
      const fn = isObject(c.function) ? c.function : {};
      return { id: str(c.id) ?? null, name: str(fn.name) ?? '', arguments: argsText(fn.arguments) };
    });
    turnCalls.forEach((c, i) =>
      view.historyToolCalls.push({ id: c.id ?? `${c.name || 'call'}#${i}`, name: c.name, arguments: c.arguments }),
    );
    const toolUseId = role === 'tool' ? str(m.tool_call_id) : undefined;
    if (role === 'tool') view.toolResults.push({ toolUseId: toolUseId ?? '', content: textOf(m.content) });
    // Ollama's tool messages carry no call id, at most the tool's name (tool_name). Neither API
    // marks a failed tool's message: its text is all it says.
    const results =
      role === 'tool'
        ? [{ id: toolUseId ?? null, name: str(m.tool_name) ?? str(m.name) ?? null, content: textOf(m.content), isError: false }]
        : [];
    view.turns.push(turn(role, role === 'tool' ? '' : m.content, turnCalls, results));
    view.messages.push(
      message(role, m.content, {
        toolCallNames: calls.map((c) => (isObject(c.function) ? str(c.function.name) : undefined)).join(','),
        toolUseIds: calls
          .map((c) => str(c.id))
          .filter(Boolean)
          .join(','),
        toolUseId,
      }),
    );
  }
  for (const t of arr(body.tools)) {
    if (!isObject(t)) continue;
    const fn = isObject(t.function) ? t.function : t;
    view.tools.push({ name: str(fn.name) ?? '', description: str(fn.description), parameters: fn.parameters });
  }
  return settings(view, {
    temperature: body.temperature ?? options.temperature,
    maxTokens: body.max_completion_tokens ?? body.max_tokens ?? options.num_predict,
    topP: body.top_p ?? options.top_p,
    stream: body.stream,
    toolChoice: body.tool_choice,
  });
}

function openaiUsage(out: ModelResponse, usage: unknown): void {
  const u = obj(usage);
  setUsage(out, {
    prompt: num(u.prompt_tokens),
    cached: num(obj(u.prompt_tokens_details).cached_tokens),
    output: num(u.completion_tokens),
    reasoning: num(obj(u.completion_tokens_details).reasoning_tokens),
  });
}

function chatJson(body: Json): ModelResponse {
  const out = emptyResponse(false);
  out.model = str(body.model);
  out.messageId = str(body.id);
  const choice = obj(arr(body.choices)[0]);
  const message = obj(choice.message);
  out.text = str(message.content) ?? '';
  out.thinking = str(message.reasoning_content) ?? str(message.reasoning) ?? '';
  out.stopReason = str(choice.finish_reason);
  for (const call of arr(message.tool_calls).filter(isObject)) {
    const fn = obj(call.function);
    out.toolCalls.push({ id: str(call.id) ?? '', name: str(fn.name) ?? '', arguments: argsText(fn.arguments) });
  }
  openaiUsage(out, body.usage);
  return out;
}

function chatStream(events: SseEvent[]): ModelResponse {
  const out = emptyResponse(true);
  const calls = new Map<number, ToolCallOut>();
  for (const e of events) {
    if (e.data.trim() === '[DONE]') {
      out.complete = true;
      continue;
    }
    const d = obj(lenientJson(e.data));
    if (d.error) out.error = errorOf(d);
    out.model ??= str(d.model);
    out.messageId ??= str(d.id);
    for (const choice of arr(d.choices).filter(isObject)) {
      const delta = obj(choice.delta);
      out.text += str(delta.content) ?? '';
      out.thinking += str(delta.reasoning_content) ?? str(delta.reasoning) ?? '';
      out.stopReason = str(choice.finish_reason) ?? out.stopReason;
      for (const part of arr(delta.tool_calls).filter(isObject)) {
        const index = num(part.index) ?? calls.size;
        const fn = obj(part.function);
        let call = calls.get(index);
        if (!call) {
          call = { id: str(part.id) ?? '', name: str(fn.name) ?? '', arguments: '' };
          calls.set(index, call);
          out.toolCalls.push(call);
        }
        if (str(part.id)) call.id = str(part.id)!;
        if (str(fn.name)) call.name = str(fn.name)!;
        call.arguments += str(fn.arguments) ?? '';
      }
    }
    if (d.usage) openaiUsage(out, d.usage);
  }
  if (out.complete && out.inputTokens === undefined && out.outputTokens === undefined) out.usageUnreported = true;
  return out;
}

export const openaiChat: WireFormat = {
  id: 'openai-chat',
  path: /^(?:\/v1)?\/chat\/completions$/,
  request: chatRequest,
  response: { stream: chatStream, json: (body) => chatJson(obj(body)) },
};
