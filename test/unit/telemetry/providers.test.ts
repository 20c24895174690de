import { describe, expect, it } from 'vitest';
import { priceOf, priceUnder } from '../../../electron/telemetry/pricing.ts';
import {
  BUILT_IN_PROVIDERS,
  BUILT_IN_TABLE,
  ProviderTable,
  providerNamed,
  requestView,
} from '../../../electron/telemetry/providers/index.ts';
import { openaiCompatible } from '../../../electron/telemetry/providers/provider.ts';
import { WIRE_FORMATS } from '../../../electron/telemetry/wire/index.ts';

const detect = (host: string, path: string, port = 443, scheme = 'https') => BUILT_IN_TABLE.detect(host, port, scheme, path);

describe('the provider table', () => {
  it('lists each provider once, each naming only wire formats that exist', () => {
    const ids = BUILT_IN_PROVIDERS.map((p) => p.id);
    expect(ids).toEqual([
      'anthropic',
      'openai',
      'google',
      'mistral',
      'groq',
      'deepseek',
      'openrouter',
      'together',
      'ollama',
      'vllm',
      'lmstudio',
    ]);
    const wires = new Set(WIRE_FORMATS.map((w) => w.id));
    for (const p of BUILT_IN_PROVIDERS) for (const e of p.endpoints) expect(wires.has(e.wire), `${p.id} ${e.wire}`).toBe(true);
  });

  it('knows each built-in provider by its host, port and path', () => {
    const cases: [string, number, string, string, string, string][] = [
      ['api.anthropic.com', 443, '/v1/messages', 'anthropic', 'anthropic-messages', 'anthropic'],
      ['api.openai.com', 443, '/v1/chat/completions', 'openai', 'openai-chat', 'openai'],
      ['api.openai.com', 443, '/responses?stream=true', 'openai', 'openai-responses', 'openai'],
      ['api.mistral.ai', 443, '/v1/chat/completions', 'mistral', 'openai-chat', 'mistral'],
      ['api.groq.com', 443, '/openai/v1/chat/completions', 'groq', 'openai-chat', 'groq'],
      ['api.deepseek.com', 443, '/chat/completions', 'deepseek', 'openai-chat', 'deepseek'],
      ['openrouter.ai', 443, '/api/v1/chat/completions', 'openrouter', 'openai-chat', 'openrouter'],
      ['api.together.xyz', 443, '/v1/chat/completions', 'together', 'openai-chat', 'together'],
      ['localhost', 11434, '/api/chat', 'ollama', 'ollama-chat', 'local'],
      ['localhost', 11434, '/v1/chat/completions', 'ollama', 'openai-chat', 'local'],
      ['127.0.0.1', 8000, '/v1/chat/completions', 'vllm', 'openai-chat', 'local'],
      ['localhost', 1234, '/v1/responses', 'lmstudio', 'openai-responses', 'local'],
    ];
    for (const [host, port, path, provider, wire, pricing] of cases)
      expect(detect(host, path, port, port === 443 ? 'https' : 'http'), `${host}:${port}${path}`).toEqual({ provider, wire, pricing });
    for (const version of ['v1', 'v1beta', 'v1alpha'])
      expect(detect('generativelanguage.googleapis.com', `/${version}/models/gemini%2D2.5:streamGenerateContent?alt=sse`)).toEqual({
        provider: 'google',
        wire: 'gemini-generate',
        pricing: 'google',
        pathModel: 'gemini-2.5',
      });
  });

  it("takes only a provider's own endpoints on its host", () => {
    for (const [host, path] of [
      ['api.anthropic.com', '/v1/messages/count_tokens'],
      ['api.anthropic.com', '/v1/chat/completions'],
      ['api.groq.com', '/v1/chat/completions'],
      ['api.mistral.ai', '/v1/models'],
      ['generativelanguage.googleapis.com', '/v1beta/models/a/b:generateContent'],
    ])
      expect(detect(host!, path!), `${host}${path}`).toBeNull();
  });

  it('records an OpenAI-compatible call on a host no provider names under the catalog provider it knows, else the host, unpriced', () => {
    expect(detect('api.fireworks.ai', '/inference/v1/chat/completions')).toBeNull();
    expect(detect('api.fireworks.ai', '/v1/chat/completions')).toEqual({
      provider: 'fireworks',
      wire: 'openai-chat',
      pricing: 'fireworks',
    });
    expect(detect('llm.corp.example', '/v1/chat/completions')).toEqual({
      provider: 'llm.corp.example',
      wire: 'openai-chat',
      pricing: 'unpriced',
    });
    expect(detect('LLM.corp.example', '/responses')).toEqual({
      provider: 'llm.corp.example',
      wire: 'openai-responses',
      pricing: 'unpriced',
    });
    // Over plain HTTP no catalog host matches: its APIs are https.
    expect(detect('api.fireworks.ai', '/v1/chat/completions', 80, 'http')).toMatchObject({
      provider: 'api.fireworks.ai',
      pricing: 'unpriced',
    });
    // A local server on a port no provider names speaks Chat Completions as any other.
    expect(detect('localhost', '/v1/chat/completions', 9999, 'http')).toMatchObject({ provider: 'localhost', pricing: 'unpriced' });
  });

  it("keeps a format that only one provider speaks as that provider's, on any host", () => {
    expect(detect('localhost', '/api/generate', 5000, 'http')).toEqual({ provider: 'ollama', wire: 'ollama-generate', pricing: 'local' });
    expect(detect('gateway.example', '/v1/messages')).toEqual({ provider: 'anthropic', wire: 'anthropic-messages', pricing: 'anthropic' });
    for (const other of ['/v2/messages', '/v1/models/m:countTokens', '/api/tags'])
      expect(detect('gateway.example', other), other).toBeNull();
  });

  it('takes a provider added to it before the unknown-host reading, under its base path', () => {
    const acme = openaiCompatible({ id: 'acme', label: 'Acme', hosts: ['llm.acme.test'], basePath: '/acme', price: 'unpriced', key: null });
    const table = new ProviderTable([...BUILT_IN_PROVIDERS, acme]);
    expect(table.detect('llm.acme.test', 443, 'https', '/acme/v1/chat/completions')).toEqual({
      provider: 'acme',
      wire: 'openai-chat',
      pricing: 'unpriced',
    });
    expect(table.detect('llm.acme.test', 443, 'https', '/v1/chat/completions')).toBeNull();
    expect(table.detect('llm.acme.test', 8443, 'https', '/v1/chat/completions')).toMatchObject({ provider: 'llm.acme.test' });
  });

  it("names each provider's hosts, for rows recorded without one", () => {
    expect(providerNamed('anthropic')?.hosts[0]).toBe('api.anthropic.com');
    expect(providerNamed('google')?.key?.name).toBe('gemini');
    expect(providerNamed('nosuch')).toBeUndefined();
  });

  it("reads a recorded call by its provider's endpoint, and a provider it does not know as Chat Completions", () => {
    const view = requestView('nosuch', '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], temperature: 0.5 });
    expect(view.messages.map((m) => [m.role, m.content])).toEqual([['user', 'hi']]);
    expect(view.temperature).toBe(0.5);
    const groq = requestView('groq', '/openai/v1/responses', { input: 'hi' });
    expect(groq.messages.map((m) => [m.role, m.content])).toEqual([['user', 'hi']]);
  });

  it('prices a paid provider from the catalog and a local or unpriced one at nothing', () => {
    const usage = { inputTokens: 1_000_000, outputTokens: 0 };
    expect(priceOf('anthropic', 'claude-sonnet-4-20250514', usage)).toEqual({ usd: 3, known: true });
    expect(priceOf('mistral', 'mistral-small-latest', usage)).toEqual({ usd: 0.1, known: true });
    expect(priceOf('ollama', 'qwen3:8b', usage)).toEqual({ usd: 0, known: false });
    expect(priceOf('anthropic', undefined, usage)).toEqual({ usd: 0, known: false });
    expect(priceUnder('unpriced', 'gpt-4o', usage)).toEqual({ usd: 0, known: false });
  });
});
