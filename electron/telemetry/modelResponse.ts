import { parseSse, type SseEvent } from './sse.ts';
import { isObject, lenientJson, obj, str, type Json } from './json.ts';

// A model API response, streamed or not, read into one shape for every provider: model, text,
// thinking, stop reason, token counts by kind and the tool calls it asks for, in order. Pure:
// bytes in, a parse out. A stream cut before its end gives what it held, marked incomplete.
// Each provider's reader lives with its provider (providers/); this is the shape they fill.

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

/** How an endpoint's response body is read: as SSE events or one JSON value, or as JSON lines (Ollama). */
export type ResponseReader =
  | { readonly stream: (events: SseEvent[]) => ModelResponse; readonly json: (body: unknown) => ModelResponse }
  | { readonly lines: (lines: Json[]) => ModelResponse };

export const emptyResponse = (streamed: boolean): ModelResponse => ({
  text: '',
  thinking: '',
  toolCalls: [],
  streamed,
  complete: !streamed,
});

export function errorOf(body: unknown): string | undefined {
  const e = obj(body).error;
  if (typeof e === 'string') return e;
  if (isObject(e)) return str(e.message) ?? JSON.stringify(e);
  return undefined;
}

/** Counts that include the cached prompt tokens in the prompt total, as OpenAI and Gemini report them. */
export function setUsage(out: ModelResponse, counts: { prompt?: number; cached?: number; output?: number; reasoning?: number }): void {
  if (counts.prompt !== undefined) out.inputTokens = counts.prompt - (counts.cached ?? 0);
  if (counts.cached !== undefined) out.cacheReadTokens = counts.cached;
  out.outputTokens = counts.output ?? out.outputTokens;
  out.reasoningTokens = counts.reasoning ?? out.reasoningTokens;
}

/** Reads a model API response body (already decoded from its Content-Encoding) with its endpoint's reader. */
export function readModelResponse(reader: ResponseReader, contentType: string | undefined, body: Uint8Array): ModelResponse {
  const text = Buffer.from(body).toString('utf8');
  if ('lines' in reader)
    return reader.lines(
      text
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((line) => obj(lenientJson(line))),
    );
  const isSse = /text\/event-stream/i.test(contentType ?? '') || /^\s*(event|data):/.test(text);
  if (isSse) return reader.stream(parseSse(body).events);
  const json = lenientJson(text);
  const out = reader.json(json);
  // A JSON body that does not parse was cut short (or is not the API's at all).
  if (json === undefined) out.complete = false;
  if (json === undefined && text.trim() !== '') out.error = 'response body is not JSON';
  out.error ??= errorOf(json);
  return out;
}
