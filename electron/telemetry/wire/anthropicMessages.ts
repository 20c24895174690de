import { arr, argsText, isObject, lenientJson, num, obj, str, type Json } from '../json.ts';
import { emptyResponse, errorOf, type ModelResponse, type ToolCallOut } from '../modelResponse.ts';
import { emptyView, message, resultView, settings, textOf, turn, type RequestView } from '../requestView.ts';
import type { SseEvent } from '../sse.ts';
import type { WireFormat } from './wire.ts';

// Anthropic's Messages API: /v1/messages, or /messages behind a base URL that already ends in /v1.

function anthropicRequest(body: Json): RequestView {
  const view = emptyView();
  if (body.system !== undefined) {
    view.messages.push(message('system', body.system));
    view.turns.push(turn('system', body.system));
  }
  for (const m of arr(body.messages)) {
    if (!isObject(m)) continue;
    const blocks = arr(m.content).filter(isObject);
    const calls = blocks.filter((b) => b.type === 'tool_use');
    const results = blocks.filter((b) => b.type === 'tool_result');
    const turnCalls = calls.map((c) => ({ id: str(c.id) ?? null, name: str(c.name) ?? '', arguments: argsText(c.input) }));
    const turnResults = results.map((r) => ({
      id: str(r.tool_use_id) ?? null,
      name: null,
      content: textOf(r.content),
      isError: r.is_error === true,
    }));
    for (const c of turnCalls) view.historyToolCalls.push({ id: c.id ?? '', name: c.name, arguments: c.arguments });
    for (const r of turnResults) view.toolResults.push(resultView(r.id ?? '', r));
    const ids = [...calls.map((c) => str(c.id)), ...results.map((r) => str(r.tool_use_id))].filter(Boolean).join(',');
    const role = str(m.role) ?? 'user';
    view.messages.push(message(role, m.content, { toolCallNames: calls.map((c) => str(c.name)).join(','), toolUseIds: ids }));
    view.turns.push(turn(role, m.content, turnCalls, turnResults));
  }
  for (const t of arr(body.tools)) {
    if (isObject(t)) view.tools.push({ name: str(t.name) ?? '', description: str(t.description), parameters: t.input_schema });
  }
  return settings(view, {
    temperature: body.temperature,
    maxTokens: body.max_tokens,
    topP: body.top_p,
    stream: body.stream,
    toolChoice: body.tool_choice,
  });
}

function anthropicUsage(out: ModelResponse, usage: unknown): void {
  const u = obj(usage);
  out.inputTokens = num(u.input_tokens) ?? out.inputTokens;
  out.outputTokens = num(u.output_tokens) ?? out.outputTokens;
  out.cacheReadTokens = num(u.cache_read_input_tokens) ?? out.cacheReadTokens;
  out.cacheWriteTokens = num(u.cache_creation_input_tokens) ?? out.cacheWriteTokens;
}

function anthropicJson(body: Json): ModelResponse {
  const out = emptyResponse(false);
  out.model = str(body.model);
  out.messageId = str(body.id);
  out.stopReason = str(body.stop_reason);
  for (const block of arr(body.content).filter(isObject)) {
    if (block.type === 'text') out.text += str(block.text) ?? '';
    else if (block.type === 'thinking') out.thinking += str(block.thinking) ?? '';
    else if (block.type === 'tool_use' || block.type === 'server_tool_use')
      out.toolCalls.push({ id: str(block.id) ?? '', name: str(block.name) ?? '', arguments: argsText(block.input) });
  }
  anthropicUsage(out, body.usage);
  return out;
}

function anthropicStream(events: SseEvent[]): ModelResponse {
  const out = emptyResponse(true);
  const blocks = new Map<number, { kind: string; call?: ToolCallOut; json: string }>();
  for (const e of events) {
    const d = obj(lenientJson(e.data));
    const type = str(d.type) ?? e.event;
    if (type === 'message_start') {
      const m = obj(d.message);
      out.model = str(m.model);
      out.messageId = str(m.id);
      anthropicUsage(out, m.usage);
    } else if (type === 'content_block_start') {
      const b = obj(d.content_block);
      const kind = str(b.type) ?? '';
      const entry: { kind: string; call?: ToolCallOut; json: string } = { kind, json: '' };
      if (kind === 'tool_use' || kind === 'server_tool_use') {
        entry.call = { id: str(b.id) ?? '', name: str(b.name) ?? '', arguments: '' };
        out.toolCalls.push(entry.call);
      }
      if (kind === 'text') out.text += str(b.text) ?? '';
      blocks.set(num(d.index) ?? blocks.size, entry);
    } else if (type === 'content_block_delta') {
      const delta = obj(d.delta);
      const block = blocks.get(num(d.index) ?? -1);
      if (delta.type === 'text_delta') out.text += str(delta.text) ?? '';
      else if (delta.type === 'thinking_delta') out.thinking += str(delta.thinking) ?? '';
      else if (delta.type === 'input_json_delta' && block) block.json += str(delta.partial_json) ?? '';
    } else if (type === 'content_block_stop') {
      const block = blocks.get(num(d.index) ?? -1);
      if (block?.call) block.call.arguments = block.json === '' ? '{}' : block.json;
    } else if (type === 'message_delta') {
      out.stopReason = str(obj(d.delta).stop_reason) ?? out.stopReason;
      anthropicUsage(out, d.usage);
    } else if (type === 'message_stop') {
      out.complete = true;
    } else if (type === 'error') {
      out.error = errorOf(d) ?? 'stream error';
    }
  }
  for (const block of blocks.values()) if (block.call && block.call.arguments === '' && block.json) block.call.arguments = block.json;
  return out;
}

export const anthropicMessages: WireFormat = {
  id: 'anthropic-messages',
  path: /^(?:\/v1)?\/messages$/,
  request: anthropicRequest,
  response: { stream: anthropicStream, json: (body) => anthropicJson(obj(body)) },
};
