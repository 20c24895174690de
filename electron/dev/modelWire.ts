// A model's answer in each provider's own wire format, as its API streams it, for the sessions
// `capsem dev seed` feeds through the recording pipeline: the same bytes a recorded session holds,
// read by the same parsers. Small on purpose: one event per block, not a token per event.

export interface SeedToolCall {
  readonly id: string;
  readonly name: string;
  /** The tool's arguments as JSON text. */
  readonly args: string;
}

export interface SeedAnswer {
  readonly model: string;
  readonly messageId: string;
  readonly text: string;
  readonly thinking: string | null;
  readonly tools: readonly SeedToolCall[];
  readonly stop: string;
  readonly usage: { readonly input: number; readonly output: number; readonly cacheRead: number; readonly cacheWrite: number };
}

export interface WireBody {
  readonly contentType: string;
  readonly body: string;
}

const sse = (events: readonly { event?: string; data: unknown }[]): string =>
  events
    .map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`)
    .join('');

function anthropic(a: SeedAnswer): WireBody {
  const blocks: { start: unknown; delta: unknown }[] = [];
  if (a.thinking) blocks.push({ start: { type: 'thinking', thinking: '' }, delta: { type: 'thinking_delta', thinking: a.thinking } });
  blocks.push({ start: { type: 'text', text: '' }, delta: { type: 'text_delta', text: a.text } });
  for (const tool of a.tools)
    blocks.push({
      start: { type: 'tool_use', id: tool.id, name: tool.name, input: {} },
      delta: { type: 'input_json_delta', partial_json: tool.args },
    });
  const message = { id: a.messageId, type: 'message', role: 'assistant', model: a.model, content: [], stop_reason: null };
  const usage = {
    input_tokens: a.usage.input,
    cache_read_input_tokens: a.usage.cacheRead,
    cache_creation_input_tokens: a.usage.cacheWrite,
  };
  return {
    contentType: 'text/event-stream',
    body: sse([
      { event: 'message_start', data: { type: 'message_start', message: { ...message, usage: { ...usage, output_tokens: 1 } } } },
      ...blocks.flatMap((block, index) => [
        { event: 'content_block_start', data: { type: 'content_block_start', index, content_block: block.start } },
        { event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: block.delta } },
        { event: 'content_block_stop', data: { type: 'content_block_stop', index } },
      ]),
      {
        event: 'message_delta',
        data: { type: 'message_delta', delta: { stop_reason: a.stop, stop_sequence: null }, usage: { output_tokens: a.usage.output } },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]),
  };
}

function openai(a: SeedAnswer): WireBody {
  const chunk = (choices: unknown[], usage: unknown = null): { data: unknown } => ({
    data: { id: a.messageId, object: 'chat.completion.chunk', created: 1, model: a.model, choices, usage },
  });
  const delta = (d: unknown, finish: string | null = null) => chunk([{ index: 0, delta: d, finish_reason: finish }]);
  return {
    contentType: 'text/event-stream',
    body: sse([
      delta({ role: 'assistant', content: '' }),
      ...(a.thinking ? [delta({ reasoning_content: a.thinking })] : []),
      delta({ content: a.text }),
      ...a.tools.map((tool, index) =>
        delta({ tool_calls: [{ index, id: tool.id, type: 'function', function: { name: tool.name, arguments: tool.args } }] }),
      ),
      delta({}, a.stop),
      chunk([], {
        prompt_tokens: a.usage.input,
        completion_tokens: a.usage.output,
        total_tokens: a.usage.input + a.usage.output,
        prompt_tokens_details: { cached_tokens: a.usage.cacheRead },
      }),
      { data: '[DONE]' },
    ]),
  };
}

function gemini(a: SeedAnswer): WireBody {
  const parts = [
    ...(a.thinking ? [{ text: a.thinking, thought: true }] : []),
    { text: a.text },
    ...a.tools.map((tool) => ({ functionCall: { id: tool.id, name: tool.name, args: JSON.parse(tool.args) as unknown } })),
  ];
  return {
    contentType: 'text/event-stream',
    body: sse([
      {
        data: {
          candidates: [{ content: { role: 'model', parts }, finishReason: a.stop, index: 0 }],
          usageMetadata: {
            promptTokenCount: a.usage.input,
            candidatesTokenCount: a.usage.output,
            cachedContentTokenCount: a.usage.cacheRead,
            totalTokenCount: a.usage.input + a.usage.output,
          },
          modelVersion: a.model,
          responseId: a.messageId,
        },
      },
    ]),
  };
}

function ollama(a: SeedAnswer): WireBody {
  const created_at = '2025-01-01T00:00:00Z';
  const lines = [
    {
      model: a.model,
      created_at,
      message: { role: 'assistant', content: '', ...(a.thinking ? { thinking: a.thinking } : {}) },
      done: false,
    },
    {
      model: a.model,
      created_at,
      message: {
        role: 'assistant',
        content: a.text,
        ...(a.tools.length
          ? { tool_calls: a.tools.map((tool) => ({ function: { name: tool.name, arguments: JSON.parse(tool.args) as unknown } })) }
          : {}),
      },
      done: false,
    },
    {
      model: a.model,
      created_at,
      message: { role: 'assistant', content: '' },
      done: true,
      done_reason: a.stop,
      prompt_eval_count: a.usage.input,
      eval_count: a.usage.output,
    },
  ];
  return { contentType: 'application/x-ndjson', body: lines.map((l) => `${JSON.stringify(l)}\n`).join('') };
}

/** The answer as the provider's API streams it. */
export function modelAnswerWire(provider: string, answer: SeedAnswer): WireBody {
  switch (provider) {
    case 'anthropic':
      return anthropic(answer);
    case 'openai':
      return openai(answer);
    case 'google':
      return gemini(answer);
    default:
      return ollama(answer);
  }
}
