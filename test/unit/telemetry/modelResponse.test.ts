import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BUILT_IN_TABLE } from '../../../electron/telemetry/providers/index.ts';
import { parseModelResponse } from '../../../electron/telemetry/wire/index.ts';
import { anthropicStream, openaiChatStream } from '../../helpers/mockUpstreams.ts';

const sse = (events: { event?: string; data: unknown }[]): Buffer =>
  Buffer.from(
    events
      .map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`)
      .join(''),
  );
const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));

/** The model API a path is on a host no provider names: its wire format is read from the path alone. */
const detectedAt = (path: string) => BUILT_IN_TABLE.detect('models.example.test', 443, 'https', path);

describe('detection on a host no provider names', () => {
  it('knows each wire format by its path', () => {
    expect(detectedAt('/v1/messages')).toEqual({ provider: 'anthropic', wire: 'anthropic-messages', pricing: 'anthropic' });
    expect(detectedAt('/v1/chat/completions?x=1')).toEqual({
      provider: 'models.example.test',
      wire: 'openai-chat',
      pricing: 'unpriced',
    });
    expect(detectedAt('/v1/responses')).toMatchObject({ wire: 'openai-responses' });
    expect(detectedAt('/v1beta/models/gemini-2.5-pro:streamGenerateContent')).toEqual({
      provider: 'google',
      wire: 'gemini-generate',
      pricing: 'google',
      pathModel: 'gemini-2.5-pro',
    });
    expect(detectedAt('/api/chat')).toEqual({ provider: 'ollama', wire: 'ollama-chat', pricing: 'local' });
    for (const other of ['/v1/models', '/health', '/v1/messages/count_tokens', '/oauth/token']) expect(detectedAt(other), other).toBeNull();
  });
});

describe('parseModelResponse', () => {
  it('reads an Anthropic stream: text, thinking, tool calls with their JSON, usage by kind', () => {
    const r = parseModelResponse(
      detectedAt('/v1/messages')!,
      'text/event-stream',
      sse(
        anthropicStream('claude-x', 'Hello there!', [{ id: 'toolu_1', name: 'Bash', input: { command: 'ls -la' } }], {
          input: 10,
          output: 7,
          cacheRead: 3,
          cacheWrite: 2,
        }),
      ),
    );
    expect(r).toMatchObject({
      model: 'claude-x',
      messageId: 'msg_test_1',
      text: 'Hello there!',
      thinking: 'Let me check.',
      stopReason: 'tool_use',
      inputTokens: 10,
      outputTokens: 7,
      cacheReadTokens: 3,
      cacheWriteTokens: 2,
      streamed: true,
      complete: true,
    });
    expect(r.toolCalls).toEqual([{ id: 'toolu_1', name: 'Bash', arguments: '{"command":"ls -la"}' }]);
  });

  it('marks an Anthropic stream cut half way as incomplete and keeps what arrived', () => {
    const events = anthropicStream('claude-x', 'Hello there, this is long', [], { input: 10, output: 7 });
    const r = parseModelResponse(detectedAt('/v1/messages')!, 'text/event-stream', sse(events.slice(0, 7)));
    expect(r.complete).toBe(false);
    expect(r.text.length).toBeGreaterThan(0);
    expect(r.stopReason).toBeUndefined();
  });

  it('reads a non-streaming Anthropic message and an error body', () => {
    const r = parseModelResponse(
      detectedAt('/v1/messages')!,
      'application/json',
      json({
        id: 'msg_9',
        model: 'claude-y',
        content: [
          { type: 'text', text: 'Hi' },
          { type: 'tool_use', id: 'toolu_9', name: 'Read', input: { path: 'a' } },
        ],
        stop_reason: 'tool_use',
        usage: { input_tokens: 5, output_tokens: 2, cache_read_input_tokens: 1 },
      }),
    );
    expect(r).toMatchObject({
      model: 'claude-y',
      text: 'Hi',
      stopReason: 'tool_use',
      inputTokens: 5,
      outputTokens: 2,
      cacheReadTokens: 1,
      streamed: false,
      complete: true,
    });
    expect(r.toolCalls).toEqual([{ id: 'toolu_9', name: 'Read', arguments: '{"path":"a"}' }]);
    const err = parseModelResponse(
      detectedAt('/v1/messages')!,
      'application/json',
      json({ type: 'error', error: { type: 'rate_limit_error', message: 'Slow down' } }),
    );
    expect(err.error).toBe('Slow down');
  });

  it('reads an OpenAI chat stream with tool-call fragments and the usage chunk', () => {
    const chunks = [
      { id: 'chatcmpl-1', model: 'gpt-4o', choices: [{ delta: { role: 'assistant', content: 'Let me ' } }] },
      { id: 'chatcmpl-1', model: 'gpt-4o', choices: [{ delta: { content: 'see.' } }] },
      {
        id: 'chatcmpl-1',
        choices: [
          { delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"ci' } }] } },
        ],
      },
      { id: 'chatcmpl-1', choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: 'ty":"Oslo"}' } }] } }] },
      { id: 'chatcmpl-1', choices: [{ delta: {}, finish_reason: 'tool_calls' }] },
      {
        id: 'chatcmpl-1',
        choices: [],
        usage: {
          prompt_tokens: 100,
          completion_tokens: 9,
          prompt_tokens_details: { cached_tokens: 40 },
          completion_tokens_details: { reasoning_tokens: 2 },
        },
      },
    ];
    const r = parseModelResponse(
      detectedAt('/v1/chat/completions')!,
      'text/event-stream',
      sse([...chunks.map((data) => ({ data })), { data: '[DONE]' }]),
    );
    expect(r).toMatchObject({
      model: 'gpt-4o',
      messageId: 'chatcmpl-1',
      text: 'Let me see.',
      stopReason: 'tool_calls',
      inputTokens: 60,
      cacheReadTokens: 40,
      outputTokens: 9,
      reasoningTokens: 2,
      complete: true,
    });
    expect(r.toolCalls).toEqual([{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' }]);
  });

  it('marks an OpenAI chat stream that carried no usage as unreported, and only a whole one', () => {
    const api = detectedAt('/v1/chat/completions')!;
    const without = parseModelResponse(api, 'text/event-stream', sse(openaiChatStream('gpt-4o', 'Hi there')));
    expect(without).toMatchObject({ text: 'Hi there', complete: true, usageUnreported: true });
    expect(without.inputTokens).toBeUndefined();
    const withUsage = parseModelResponse(
      api,
      'text/event-stream',
      sse(openaiChatStream('gpt-4o', 'Hi there', { prompt: 9, completion: 2 })),
    );
    expect(withUsage).toMatchObject({ inputTokens: 9, outputTokens: 2, complete: true });
    expect(withUsage.usageUnreported).toBeUndefined();
    // Cut before [DONE], a stream may have lost its usage chunk: that is no design of the provider's.
    const cut = parseModelResponse(api, 'text/event-stream', sse(openaiChatStream('gpt-4o', 'Hi there').slice(0, -1)));
    expect(cut).toMatchObject({ complete: false });
    expect(cut.usageUnreported).toBeUndefined();
  });

  it('reads an OpenAI Responses result, streamed or not', () => {
    const response = {
      id: 'resp_1',
      model: 'gpt-5',
      status: 'completed',
      output: [
        { type: 'reasoning', summary: [{ type: 'summary_text', text: 'think' }] },
        { type: 'function_call', call_id: 'fc_1', name: 'shell', arguments: '{"cmd":"pwd"}' },
        { type: 'message', content: [{ type: 'output_text', text: 'ok' }] },
      ],
      usage: {
        input_tokens: 50,
        output_tokens: 5,
        input_tokens_details: { cached_tokens: 10 },
        output_tokens_details: { reasoning_tokens: 3 },
      },
    };
    const plain = parseModelResponse(detectedAt('/v1/responses')!, 'application/json', json(response));
    expect(plain).toMatchObject({
      model: 'gpt-5',
      text: 'ok',
      thinking: 'think',
      stopReason: 'tool_calls',
      inputTokens: 40,
      cacheReadTokens: 10,
      outputTokens: 5,
      reasoningTokens: 3,
    });
    const streamed = parseModelResponse(
      detectedAt('/v1/responses')!,
      'text/event-stream',
      sse([
        { event: 'response.created', data: { type: 'response.created', response: { model: 'gpt-5' } } },
        { event: 'response.completed', data: { type: 'response.completed', response } },
      ]),
    );
    expect(streamed).toMatchObject({ text: 'ok', streamed: true, complete: true });
    expect(streamed.toolCalls).toEqual([{ id: 'fc_1', name: 'shell', arguments: '{"cmd":"pwd"}' }]);
  });

  it('reads Gemini chunks (streamGenerateContent) and takes the model from the path when the body has none', () => {
    const api = detectedAt('/v1beta/models/gemini-2.5-flash:streamGenerateContent')!;
    const r = parseModelResponse(
      api,
      'text/event-stream',
      sse([
        { data: { candidates: [{ content: { role: 'model', parts: [{ text: 'Thinking', thought: true }, { text: 'Hel' }] } }] } },
        {
          data: {
            candidates: [
              { content: { parts: [{ text: 'lo' }, { functionCall: { name: 'ls', args: { dir: '/' } } }] }, finishReason: 'STOP' },
            ],
            usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 4, cachedContentTokenCount: 5, thoughtsTokenCount: 3 },
          },
        },
      ]),
    );
    expect(r).toMatchObject({
      model: 'gemini-2.5-flash',
      text: 'Hello',
      thinking: 'Thinking',
      stopReason: 'STOP',
      inputTokens: 15,
      cacheReadTokens: 5,
      outputTokens: 4,
      reasoningTokens: 3,
      complete: true,
    });
    // Gemini gave the call no id: the parser says so, the recorder names it.
    expect(r.toolCalls).toEqual([{ id: '', name: 'ls', arguments: '{"dir":"/"}' }]);
  });

  it('reads Ollama NDJSON streams', () => {
    const lines = [
      { model: 'qwen3', message: { role: 'assistant', content: 'Hi ' }, done: false },
      { model: 'qwen3', message: { content: 'there' }, done: true, done_reason: 'stop', prompt_eval_count: 12, eval_count: 3 },
    ];
    const r = parseModelResponse(
      detectedAt('/api/chat')!,
      'application/x-ndjson',
      Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n')),
    );
    expect(r).toMatchObject({
      model: 'qwen3',
      text: 'Hi there',
      stopReason: 'stop',
      inputTokens: 12,
      outputTokens: 3,
      streamed: true,
      complete: true,
    });
  });

  it('never throws on arbitrary bytes for any API (property)', () => {
    const apis = ['/v1/messages', '/v1/chat/completions', '/v1/responses', '/v1beta/models/m:generateContent', '/api/chat'].map((p) =>
      detectedAt(p)!,
    );
    fc.assert(
      fc.property(
        fc.constantFrom(...apis),
        fc.constantFrom('text/event-stream', 'application/json', undefined),
        fc.oneof(
          fc.uint8Array({ maxLength: 400 }),
          fc.json().map((j) => new TextEncoder().encode(`data: ${j}\n\n`)),
        ),
        (api, type, bytes) => {
          const r = parseModelResponse(api, type, bytes);
          expect(Array.isArray(r.toolCalls)).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
