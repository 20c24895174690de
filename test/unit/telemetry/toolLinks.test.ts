import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestView } from '../../../electron/telemetry/providers/index.ts';
import { conversationLinks } from '../../../electron/telemetry/toolLinks.ts';

// Links from tool results to the calls they answer, read from the conversation a request re-sends.

describe('conversation links', () => {
  it('names each Ollama result by the call it answers, by tool name first and then by position', () => {
    const body = (extra: unknown[]) => ({
      model: 'qwen3',
      messages: [
        { role: 'user', content: 'Weather and time in Oslo?' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            { function: { name: 'get_weather', arguments: { city: 'Oslo' } } },
            { function: { name: 'get_time', arguments: { tz: 'CET' } } },
          ],
        },
        ...extra,
      ],
    });
    // The time came back first: tool_name, where the client sends it, decides.
    const named = conversationLinks(
      requestView(
        'ollama',
        '/api/chat',
        body([
          { role: 'tool', tool_name: 'get_time', content: '12:00' },
          { role: 'tool', tool_name: 'get_weather', content: 'rain' },
        ]),
      ).turns,
    );
    expect(named.results.map((r) => [r.content, r.answers?.index, r.answers?.name])).toEqual([
      ['12:00', 1, 'get_time'],
      ['rain', 0, 'get_weather'],
    ]);
    // Without names, the n-th result answers the n-th call, as Ollama itself reads them.
    const unnamed = conversationLinks(
      requestView(
        'ollama',
        '/api/chat',
        body([
          { role: 'tool', content: 'rain' },
          { role: 'tool', content: '12:00' },
        ]),
      ).turns,
    );
    expect(unnamed.results.map((r) => [r.content, r.answers?.index])).toEqual([
      ['rain', 0],
      ['12:00', 1],
    ]);
  });

  it("finds an Anthropic result's call by its id, however far back the call was made", () => {
    const links = conversationLinks(
      requestView('anthropic', '/v1/messages', {
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_A', name: 'Bash', input: { command: 'ls' } }] },
          { role: 'user', content: [{ type: 'text', text: 'wait' }] },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_B', name: 'Read', input: { path: 'a' } }] },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_A', content: 'a.txt' },
              { type: 'tool_result', tool_use_id: 'toolu_B', content: 'hi' },
            ],
          },
        ],
      }).turns,
    );
    expect(links.results.map((r) => [r.providerId, r.answers?.providerId, r.answers?.name])).toEqual([
      ['toolu_A', 'toolu_A', 'Bash'],
      ['toolu_B', 'toolu_B', 'Read'],
    ]);
    expect(links.results[0]!.answers!.prefix).not.toBe(links.results[1]!.answers!.prefix);
  });

  it('names a call the same way in the request that answers it as in the request that asked for it', () => {
    const asked = { contents: [{ role: 'user', parts: [{ text: 'Weather in Oslo?' }] }] };
    const answering = {
      contents: [
        ...asked.contents,
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Oslo' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { weather: 'rain' } } }] },
      ],
    };
    const before = conversationLinks(requestView('google', '/v1beta/models/g:generateContent', asked).turns);
    const after = conversationLinks(requestView('google', '/v1beta/models/g:generateContent', answering).turns);
    expect(after.results[0]!.answers).toEqual({ prefix: before.prefix, index: 0, name: 'get_weather', providerId: null });
    // Another conversation asking the same call is another prefix.
    const other = conversationLinks(
      requestView('google', '/v1beta/models/g:generateContent', { contents: [{ role: 'user', parts: [{ text: 'Weather in Paris?' }] }] })
        .turns,
    );
    expect(other.prefix).not.toBe(before.prefix);
  });

  it('gives a result the same key each time its conversation is re-sent, and every result a key of its own (property)', () => {
    const turnsArb = fc.array(
      fc.record({
        calls: fc.array(fc.constantFrom('read', 'write', 'ls'), { minLength: 1, maxLength: 3 }),
        text: fc.string({ maxLength: 8 }),
      }),
      { minLength: 1, maxLength: 5 },
    );
    fc.assert(
      fc.property(turnsArb, (rounds) => {
        const messages: unknown[] = [{ role: 'user', content: 'start' }];
        const keys: string[][] = [];
        for (const [r, round] of rounds.entries()) {
          messages.push({
            role: 'assistant',
            content: round.text,
            tool_calls: round.calls.map((name, i) => ({
              id: `call_${r}_${i}`,
              type: 'function',
              function: { name, arguments: JSON.stringify({ r, i }) },
            })),
          });
          round.calls.forEach((_, i) => messages.push({ role: 'tool', tool_call_id: `call_${r}_${i}`, content: `out ${r} ${i}` }));
          const links = conversationLinks(requestView('openai', '/v1/chat/completions', { messages }).turns);
          keys.push(links.results.map((x) => x.key));
          expect(links.results.map((x) => x.answers?.providerId)).toEqual(links.results.map((x) => x.providerId));
        }
        for (let n = 1; n < keys.length; n++) expect(keys[n]!.slice(0, keys[n - 1]!.length)).toEqual(keys[n - 1]);
        const last = keys.at(-1)!;
        expect(new Set(last).size).toBe(last.length);
      }),
    );
  });
});
