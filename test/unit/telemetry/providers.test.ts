import { describe, expect, it } from 'vitest';
import { priceOf } from '../../../electron/telemetry/pricing.ts';
import { detectModelApi, MODEL_PROVIDERS, providerNamed, requestView } from '../../../electron/telemetry/providers/index.ts';

describe('the provider registry', () => {
  it('lists each provider once, and each endpoint wire format once across providers', () => {
    const ids = MODEL_PROVIDERS.map((p) => p.id);
    const wires = MODEL_PROVIDERS.flatMap((p) => p.endpoints.map((e) => e.wire));
    expect(ids).toEqual(['anthropic', 'openai', 'google', 'ollama']);
    expect(new Set(wires).size).toBe(wires.length);
  });

  it('takes the paths a client uses with a base URL that already ends in /v1, and every Gemini API version', () => {
    expect(detectModelApi('/messages')).toEqual({ provider: 'anthropic', wire: 'anthropic-messages' });
    expect(detectModelApi('/chat/completions')).toEqual({ provider: 'openai', wire: 'openai-chat' });
    expect(detectModelApi('/responses?stream=true')).toEqual({ provider: 'openai', wire: 'openai-responses' });
    for (const version of ['v1', 'v1beta', 'v1alpha']) {
      expect(detectModelApi(`/${version}/models/gemini%2D2.5:streamGenerateContent?alt=sse`)).toEqual({
        provider: 'google',
        wire: 'gemini-generate',
        pathModel: 'gemini-2.5',
      });
    }
    expect(detectModelApi('/api/generate')).toEqual({ provider: 'ollama', wire: 'ollama-generate' });
    for (const other of ['/v2/messages', '/v1/models/m:countTokens', '/v1beta/models/a/b:generateContent', '/api/tags'])
      expect(detectModelApi(other), other).toBeNull();
  });

  it("names each provider's usual host, for rows recorded without one", () => {
    expect(MODEL_PROVIDERS.map((p) => [p.id, p.host])).toEqual([
      ['anthropic', 'api.anthropic.com'],
      ['openai', 'api.openai.com'],
      ['google', 'generativelanguage.googleapis.com'],
      ['ollama', 'localhost:11434'],
    ]);
    expect(providerNamed('mistral')).toBeUndefined();
  });

  it('reads a request of a provider it does not know as Chat Completions', () => {
    const view = requestView('mistral', '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], temperature: 0.5 });
    expect(view.messages.map((m) => [m.role, m.content])).toEqual([['user', 'hi']]);
    expect(view.temperature).toBe(0.5);
  });

  it('prices a paid provider from the catalog and a local one at nothing', () => {
    const usage = { inputTokens: 1_000_000, outputTokens: 0 };
    expect(priceOf('anthropic', 'claude-sonnet-4-20250514', usage)).toEqual({ usd: 3, known: true });
    expect(priceOf('ollama', 'qwen3:8b', usage)).toEqual({ usd: 0, known: false });
    expect(priceOf('anthropic', undefined, usage)).toEqual({ usd: 0, known: false });
  });
});
