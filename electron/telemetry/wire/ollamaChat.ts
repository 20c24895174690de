import { arr, argsText, isObject, num, obj, str, type Json } from '../json.ts';
import { emptyResponse, errorOf, type ModelResponse } from '../modelResponse.ts';
import type { RequestView } from '../requestView.ts';
import { chatRequest } from './openaiChat.ts';
import type { WireFormat } from './wire.ts';

// Ollama's native chat API, /api/chat, answered as JSON lines (one line when not streaming), as its
// /api/generate is (ollamaGenerate.ts).

function ollamaChunk(out: ModelResponse, body: Json): void {
  out.model = str(body.model) ?? out.model;
  const message = obj(body.message);
  out.text += str(message.content) ?? str(body.response) ?? '';
  out.thinking += str(message.thinking) ?? str(body.thinking) ?? '';
  for (const call of arr(message.tool_calls).filter(isObject)) {
    const fn = obj(call.function);
    out.toolCalls.push({ id: str(call.id) ?? '', name: str(fn.name) ?? '', arguments: argsText(fn.arguments) });
  }
  if (body.done === true) {
    out.complete = true;
    out.stopReason = str(body.done_reason) ?? 'stop';
    out.inputTokens = num(body.prompt_eval_count) ?? out.inputTokens;
    out.outputTokens = num(body.eval_count) ?? out.outputTokens;
  }
  if (body.error) out.error = errorOf(body);
}

/** Ollama's answer, a JSON line per chunk: /api/chat's and /api/generate's alike. */
export function ollamaLines(lines: Json[]): ModelResponse {
  const out = emptyResponse(false);
  out.streamed = lines.length > 1;
  out.complete = false;
  for (const line of lines) ollamaChunk(out, line);
  return out;
}

/** /api/chat: Chat Completions' messages with the sampling settings under options; it streams unless told not to. */
function chatRequestOf(body: Json): RequestView {
  return chatRequest({ ...body, stream: body.stream !== false }, isObject(body.options) ? body.options : {});
}

export const ollamaChat: WireFormat = {
  id: 'ollama-chat',
  path: /^\/api\/chat$/,
  request: chatRequestOf,
  response: { lines: ollamaLines },
};
