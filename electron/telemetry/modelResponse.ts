import { parseSse, type SseEvent } from './sse.ts';
import { lenientJson } from './lenientJson.ts';

// A model API response, streamed or not, read into one shape for every provider: model, text,
// thinking, stop reason, token counts by kind and the tool calls it asks for, in order. Pure:
// bytes in, a parse out. A stream cut before its end gives what it held, marked incomplete.

export type Provider = 'anthropic' | 'openai' | 'google' | 'ollama';

export interface ModelApi {
  readonly provider: Provider;
  readonly flavor: 'messages' | 'chat' | 'responses' | 'generate' | 'ollama-chat' | 'ollama-generate';
  /** The model named in the URL path (Gemini), the last place model resolution looks. */
  readonly pathModel?: string;
}

/** A path segment percent-decoded, or as it came when its escapes are broken (%E0%A4%A). */
function decodedSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Which model API a request path is; null for health checks, auth and everything else. */
export function detectModelApi(path: string): ModelApi | null {
  const bare = path.split('?')[0]!;
  if (/^(\/v1)?\/messages$/.test(bare)) return { provider: 'anthropic', flavor: 'messages' };
  if (/^(\/v1)?\/chat\/completions$/.test(bare)) return { provider: 'openai', flavor: 'chat' };
  if (/^(\/v1)?\/responses$/.test(bare)) return { provider: 'openai', flavor: 'responses' };
  const gemini = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(bare);
  if (gemini) return { provider: 'google', flavor: 'generate', pathModel: decodedSegment(gemini[1]!) };
  if (bare === '/api/chat') return { provider: 'ollama', flavor: 'ollama-chat' };
  if (bare === '/api/generate') return { provider: 'ollama', flavor: 'ollama-generate' };
  return null;
}

export interface ToolCallOut {
  /** The provider's id for the call; '' when it gives none (Gemini without ids, Ollama). */
  id: string;
  name: string;
  arguments: string;
}

export interface ModelResponse {
  model?: string;
  messageId?: string;
  text: string;
  thinking: string;
  stopReason?: string;
  /** Uncached prompt tokens. */
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  reasoningTokens?: number;
  toolCalls: ToolCallOut[];
  streamed: boolean;
  /** False when a stream ended before its final event. */
  complete: boolean;
  /**
   * True when a whole stream carried no usage at all because its API sends usage only on request:
   * an OpenAI Chat Completions stream reports it only when the request sets
   * `stream_options.include_usage`, which the official SDKs leave unset.
   */
  usageUnreported?: boolean;
  error?: string;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const obj = (v: unknown): Json => (isObject(v) ? v : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const args = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v ?? {}));

const empty = (streamed: boolean): ModelResponse => ({ text: '', thinking: '', toolCalls: [], streamed, complete: !streamed });

function errorOf(body: unknown): string | undefined {
  const e = obj(body).error;
  if (typeof e === 'string') return e;
  if (isObject(e)) return str(e.message) ?? JSON.stringify(e);
  return undefined;
}

// --- Anthropic Messages -------------------------------------------------------------------

function anthropicUsage(out: ModelResponse, usage: unknown): void {
  const u = obj(usage);
  out.inputTokens = num(u.input_tokens) ?? out.inputTokens;
  out.outputTokens = num(u.output_tokens) ?? out.outputTokens;
  out.cacheReadTokens = num(u.cache_read_input_tokens) ?? out.cacheReadTokens;
  out.cacheWriteTokens = num(u.cache_creation_input_tokens) ?? out.cacheWriteTokens;
}

function anthropicJson(body: Json): ModelResponse {
  const out = empty(false);
  out.model = str(body.model);
  out.messageId = str(body.id);
  out.stopReason = str(body.stop_reason);
  for (const block of arr(body.content).filter(isObject)) {
    if (block.type === 'text') out.text += str(block.text) ?? '';
    else if (block.type === 'thinking') out.thinking += str(block.thinking) ?? '';
    else if (block.type === 'tool_use' || block.type === 'server_tool_use') out.toolCalls.push({ id: str(block.id) ?? '', name: str(block.name) ?? '', arguments: args(block.input) });
  }
  anthropicUsage(out, body.usage);
  return out;
}

function anthropicStream(events: SseEvent[]): ModelResponse {
  const out = empty(true);
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

// --- OpenAI Chat Completions ----------------------------------------------------------------

/** Counts that include the cached prompt tokens in the prompt total, as OpenAI and Gemini report them. */
function setUsage(out: ModelResponse, counts: { prompt?: number; cached?: number; output?: number; reasoning?: number }): void {
  if (counts.prompt !== undefined) out.inputTokens = counts.prompt - (counts.cached ?? 0);
  if (counts.cached !== undefined) out.cacheReadTokens = counts.cached;
  out.outputTokens = counts.output ?? out.outputTokens;
  out.reasoningTokens = counts.reasoning ?? out.reasoningTokens;
}

function openaiUsage(out: ModelResponse, usage: unknown): void {
  const u = obj(usage);
  setUsage(out, { prompt: num(u.prompt_tokens), cached: num(obj(u.prompt_tokens_details).cached_tokens), output: num(u.completion_tokens), reasoning: num(obj(u.completion_tokens_details).reasoning_tokens) });
}

function chatJson(body: Json): ModelResponse {
  const out = empty(false);
  out.model = str(body.model);
  out.messageId = str(body.id);
  const choice = obj(arr(body.choices)[0]);
  const message = obj(choice.message);
  out.text = str(message.content) ?? '';
  out.thinking = str(message.reasoning_content) ?? str(message.reasoning) ?? '';
  out.stopReason = str(choice.finish_reason);
  for (const call of arr(message.tool_calls).filter(isObject)) {
    const fn = obj(call.function);
    out.toolCalls.push({ id: str(call.id) ?? '', name: str(fn.name) ?? '', arguments: args(fn.arguments) });
  }
  openaiUsage(out, body.usage);
  return out;
}

function chatStream(events: SseEvent[]): ModelResponse {
  const out = empty(true);
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

// --- OpenAI Responses -----------------------------------------------------------------------

function responsesUsage(out: ModelResponse, usage: unknown): void {
  const u = obj(usage);
  setUsage(out, { prompt: num(u.input_tokens), cached: num(obj(u.input_tokens_details).cached_tokens), output: num(u.output_tokens), reasoning: num(obj(u.output_tokens_details).reasoning_tokens) });
}

function responsesJson(body: Json, streamed = false): ModelResponse {
  const out = empty(streamed);
  out.complete = true;
  out.model = str(body.model);
  out.messageId = str(body.id);
  out.stopReason = str(body.status);
  for (const item of arr(body.output).filter(isObject)) {
    if (item.type === 'message') {
      for (const part of arr(item.content).filter(isObject)) if (part.type === 'output_text') out.text += str(part.text) ?? '';
    } else if (item.type === 'function_call') {
      out.toolCalls.push({ id: str(item.call_id) ?? str(item.id) ?? '', name: str(item.name) ?? '', arguments: args(item.arguments) });
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
  const partial = empty(true);
  for (const e of events) {
    const d = obj(lenientJson(e.data));
    const type = str(d.type) ?? e.event;
    if (type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') last = obj(d.response);
    else if (type === 'response.created') partial.model = str(obj(d.response).model);
    else if (type === 'response.output_text.delta') partial.text += str(d.delta) ?? '';
    else if (type === 'response.output_item.done') {
      const item = obj(d.item);
      if (item.type === 'function_call') partial.toolCalls.push({ id: str(item.call_id) ?? '', name: str(item.name) ?? '', arguments: args(item.arguments) });
    } else if (type === 'error') partial.error = errorOf(d) ?? str(d.message) ?? 'stream error';
  }
  return last ? responsesJson(last, true) : partial;
}

// --- Google Gemini --------------------------------------------------------------------------

function geminiChunk(out: ModelResponse, body: Json): void {
  out.model = str(body.modelVersion) ?? out.model;
  out.messageId = str(body.responseId) ?? out.messageId;
  for (const cand of arr(body.candidates).filter(isObject).slice(0, 1)) {
    for (const part of arr(obj(cand.content).parts).filter(isObject)) {
      if (typeof part.text === 'string') {
        if (part.thought === true) out.thinking += part.text;
        else out.text += part.text;
      }
      const fc = obj(part.functionCall);
      if (str(fc.name)) out.toolCalls.push({ id: str(fc.id) ?? '', name: str(fc.name)!, arguments: args(fc.args) });
    }
    out.stopReason = str(cand.finishReason) ?? out.stopReason;
  }
  const u = obj(body.usageMetadata);
  setUsage(out, { prompt: num(u.promptTokenCount), cached: num(u.cachedContentTokenCount), output: num(u.candidatesTokenCount), reasoning: num(u.thoughtsTokenCount) });
  if (body.error) out.error = errorOf(body);
}

// --- Ollama ---------------------------------------------------------------------------------

function ollamaChunk(out: ModelResponse, body: Json): void {
  out.model = str(body.model) ?? out.model;
  const message = obj(body.message);
  out.text += str(message.content) ?? str(body.response) ?? '';
  out.thinking += str(message.thinking) ?? str(body.thinking) ?? '';
  for (const call of arr(message.tool_calls).filter(isObject)) {
    const fn = obj(call.function);
    out.toolCalls.push({ id: str(call.id) ?? '', name: str(fn.name) ?? '', arguments: args(fn.arguments) });
  }
  if (body.done === true) {
    out.complete = true;
    out.stopReason = str(body.done_reason) ?? 'stop';
    out.inputTokens = num(body.prompt_eval_count) ?? out.inputTokens;
    out.outputTokens = num(body.eval_count) ?? out.outputTokens;
  }
  if (body.error) out.error = errorOf(body);
}

/** Reads a model API response body (already decoded from its Content-Encoding). */
export function parseModelResponse(api: ModelApi, contentType: string | undefined, body: Uint8Array): ModelResponse {
  const text = Buffer.from(body).toString('utf8');
  const isSse = /text\/event-stream/i.test(contentType ?? '') || /^\s*(event|data):/.test(text);
  let out: ModelResponse;
  if (api.flavor === 'ollama-chat' || api.flavor === 'ollama-generate') {
    out = empty(false);
    const lines = text.split('\n').filter((l) => l.trim() !== '');
    out.streamed = lines.length > 1;
    out.complete = false;
    for (const line of lines) ollamaChunk(out, obj(lenientJson(line)));
  } else if (isSse) {
    const { events } = parseSse(body);
    if (api.flavor === 'messages') out = anthropicStream(events);
    else if (api.flavor === 'chat') out = chatStream(events);
    else if (api.flavor === 'responses') out = responsesStream(events);
    else {
      out = empty(true);
      for (const e of events) geminiChunk(out, obj(lenientJson(e.data)));
      out.complete = out.stopReason !== undefined;
    }
  } else {
    const json = lenientJson(text);
    if (api.flavor === 'messages') out = anthropicJson(obj(json));
    else if (api.flavor === 'chat') out = chatJson(obj(json));
    else if (api.flavor === 'responses') out = responsesJson(obj(json));
    else {
      // Non-streaming Gemini is one response object (or, from some gateways, an array of chunks).
      out = empty(false);
      for (const chunk of Array.isArray(json) ? json : [json]) geminiChunk(out, obj(chunk));
    }
    // A JSON body that does not parse was cut short (or is not the API's at all).
    if (json === undefined) out.complete = false;
    if (json === undefined && text.trim() !== '') out.error = 'response body is not JSON';
    out.error ??= errorOf(json);
  }
  out.model ??= api.pathModel;
  return out;
}
