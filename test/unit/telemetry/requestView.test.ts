import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestView } from '../../../electron/telemetry/providers/index.ts';
import { promptOf } from '../../../electron/telemetry/requestView.ts';

describe('requestView', () => {
  it('reads an Anthropic Messages request: system first, tool_use history, tool results, tools, settings', () => {
    const view = requestView('anthropic', '/v1/messages', {
      model: 'claude-sonnet-4-20250514',
      max_tokens: 1024,
      temperature: 0.2,
      stream: true,
      tool_choice: { type: 'auto' },
      system: [{ type: 'text', text: 'Be brief.' }],
      tools: [{ name: 'Bash', description: 'run a command', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: 'list files' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Running ls.' },
            { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } },
          ],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'a.txt' }], is_error: true }],
        },
      ],
    });
    expect(view.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', 'Be brief.'],
      ['user', 'list files'],
      ['assistant', 'Running ls.'],
      ['user', ''],
    ]);
    expect(view.messages[2]).toMatchObject({ toolCallNames: 'Bash', toolUseIds: 'toolu_1' });
    expect(view.messages[1]!.contentBytes).toBe(Buffer.byteLength('"list files"'));
    expect(view.historyToolCalls).toEqual([{ id: 'toolu_1', name: 'Bash', arguments: '{"command":"ls"}' }]);
    expect(view.toolResults).toEqual([{ toolUseId: 'toolu_1', content: 'a.txt', isError: true }]);
    expect(view.tools).toEqual([{ name: 'Bash', description: 'run a command', parameters: { type: 'object' } }]);
    expect(view).toMatchObject({ temperature: 0.2, maxTokens: 1024, stream: true, toolChoice: { type: 'auto' } });
  });

  it('reads OpenAI Chat Completions with tool calls and role tool results', () => {
    const view = requestView('openai', '/v1/chat/completions', {
      model: 'gpt-4o',
      max_completion_tokens: 50,
      top_p: 0.9,
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'weather', parameters: { type: 'object' } } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'weather?' }] },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_9', content: 'rain' },
      ],
    });
    expect(view.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(view.messages[2]).toMatchObject({ toolUseId: 'call_9', content: 'rain' });
    expect(view.historyToolCalls).toEqual([{ id: 'call_9', name: 'get_weather', arguments: '{"city":"Oslo"}' }]);
    expect(view.toolResults).toEqual([{ toolUseId: 'call_9', content: 'rain' }]);
    expect(view).toMatchObject({ maxTokens: 50, topP: 0.9 });
    expect(view.stream).toBeUndefined();
  });

  it('reads the OpenAI Responses API: instructions, input items, function calls and outputs', () => {
    const view = requestView('openai', '/v1/responses', {
      instructions: 'sys',
      max_output_tokens: 99,
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
        { type: 'function_call', call_id: 'fc_1', name: 'shell', arguments: '{"cmd":"pwd"}' },
        { type: 'function_call_output', call_id: 'fc_1', output: '/root' },
      ],
      tools: [{ type: 'function', name: 'shell', parameters: {} }],
    });
    expect(view.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', 'sys'],
      ['user', 'hi'],
      ['assistant', ''],
      ['tool', '/root'],
    ]);
    expect(view.historyToolCalls[0]).toEqual({ id: 'fc_1', name: 'shell', arguments: '{"cmd":"pwd"}' });
    expect(view.toolResults[0]).toEqual({ toolUseId: 'fc_1', content: '/root' });
    expect(view.maxTokens).toBe(99);
  });

  it('reads Gemini generateContent: systemInstruction, parts, function calls and declarations', () => {
    const view = requestView('google', '/v1beta/models/gemini-2.5-pro:generateContent', {
      systemInstruction: { parts: [{ text: 'sys' }] },
      contents: [
        { role: 'user', parts: [{ text: 'a' }, { text: 'b' }] },
        { role: 'model', parts: [{ functionCall: { name: 'ls', args: { dir: '/' } } }] },
      ],
      tools: [{ functionDeclarations: [{ name: 'ls', description: 'list', parameters: { type: 'OBJECT' } }] }],
      generationConfig: { temperature: 1, maxOutputTokens: 10 },
    });
    expect(view.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', 'sys'],
      ['user', 'a\nb'],
      ['model', ''],
    ]);
    expect(view.historyToolCalls).toEqual([{ id: 'ls#0', name: 'ls', arguments: '{"dir":"/"}' }]);
    expect(view.tools).toEqual([{ name: 'ls', description: 'list', parameters: { type: 'OBJECT' } }]);
    expect(view).toMatchObject({ temperature: 1, maxTokens: 10 });
  });

  it('reads Ollama chat (streams unless told not to) and generate', () => {
    expect(
      requestView('ollama', '/api/chat', { model: 'qwen3', messages: [{ role: 'user', content: 'x' }], options: { num_predict: 5 } }),
    ).toMatchObject({ stream: true, maxTokens: 5 });
    expect(requestView('ollama', '/api/chat', { messages: [], stream: false }).stream).toBeUndefined();
    expect(requestView('ollama', '/api/generate', { prompt: 'p', system: 's' }).messages.map((m) => m.content)).toEqual(['s', 'p']);
  });

  it("takes the last user message that holds text for the prompt, never a tool's result (property)", () => {
    const content = fc.oneof(fc.string(), fc.array(fc.record({ type: fc.constant('text'), text: fc.string() }), { maxLength: 3 }));
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.array(content, { minLength: 1, maxLength: 4 }), (prompt, results) => {
        const anthropic = requestView('anthropic', '/v1/messages', {
          messages: [
            { role: 'user', content: prompt },
            { role: 'assistant', content: results.map((_, i) => ({ type: 'tool_use', id: `toolu_${i}`, name: 'Bash', input: {} })) },
            {
              role: 'user',
              content: results.map((c, i) => ({ type: 'tool_result', tool_use_id: `toolu_${i}`, content: c, is_error: i === 0 })),
            },
          ],
        });
        expect(promptOf(anthropic)).toBe(prompt);
        expect(anthropic.toolResults[0]!.isError).toBe(true);
        const gemini = requestView('google', '/v1beta/models/gemini-2.5-flash:generateContent', {
          contents: [
            { role: 'user', parts: [{ text: prompt }] },
            { role: 'model', parts: results.map(() => ({ functionCall: { name: 'ls', args: {} } })) },
            {
              role: 'user',
              parts: results.map((c, i) => ({ functionResponse: { name: 'ls', response: i === 0 ? { error: c } : { output: c } } })),
            },
          ],
        });
        expect(promptOf(gemini)).toBe(prompt);
        expect(gemini.toolResults.map((r) => r.isError === true)).toEqual(results.map((_, i) => i === 0));
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on arbitrary JSON, whatever the provider (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('anthropic', 'openai', 'google', 'ollama', 'other'),
        fc.constantFrom('/v1/messages', '/v1/responses', '/api/generate'),
        fc.jsonValue(),
        (provider, path, body) => {
          const view = requestView(provider, path, body);
          expect(Array.isArray(view.messages)).toBe(true);
          expect(Array.isArray(view.tools)).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
