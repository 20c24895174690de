import { describe, expect, it } from 'vitest';
import { providersOf } from '../../../electron/credentials/providers.ts';
import { parsePolicy, providerTableOf } from '../../../electron/policy/policy.ts';

// The policy file's `providers`: each entry is checked with a message that says what is wrong and
// what would do, and the valid ones join the provider table the recorder and the broker read.

const policyWith = (providers: unknown): string => JSON.stringify({ version: 1, rules: [], providers });
const errorOf = (providers: unknown): string => {
  try {
    parsePolicy(policyWith(providers), 'policy.json');
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the policy was accepted');
};

const ACME = {
  id: 'acme',
  label: 'Acme AI',
  hosts: ['LLM.acme.test'],
  basePath: '/acme/v1',
  wire: 'openai-chat',
  price: 'mistral',
  key: { env: 'ACME_API_KEY', standInPrefix: 'acme-' },
};

describe("the policy's providers", () => {
  it('are detected by host and base path, priced as they say, and take their key as a bearer token unless told otherwise', () => {
    const policy = parsePolicy(
      policyWith([ACME, { id: 'lab', hosts: ['10.0.0.7'], ports: [8080], wire: ['openai-chat', 'ollama-chat'], price: 'local' }]),
      'p',
    );
    const table = providerTableOf(policy);
    expect(providerTableOf(policy)).toBe(table);
    expect(table.detect('llm.acme.test', 443, 'https', '/acme/v1/chat/completions')).toEqual({
      provider: 'acme',
      wire: 'openai-chat',
      pricing: 'mistral',
    });
    expect(table.detect('10.0.0.7', 8080, 'http', '/api/chat')).toEqual({ provider: 'lab', wire: 'ollama-chat', pricing: 'local' });
    expect(table.detect('api.mistral.ai', 443, 'https', '/v1/chat/completions')).toMatchObject({ provider: 'mistral' });
    const acme = providersOf(policy.credentials, table).find((p) => p.id === 'acme');
    expect(acme).toEqual({
      id: 'acme',
      env: ['ACME_API_KEY'],
      headers: [{ name: 'authorization', bearer: true }],
      query: null,
      hosts: ['llm.acme.test'],
      ports: [443],
      standIn: { prefix: 'acme-', randomChars: 48, suffix: '' },
    });
    expect(providersOf(policy.credentials, table).some((p) => p.id === 'lab')).toBe(false);
  });

  it("default to Chat Completions at the host's root, unpriced, with no key", () => {
    const table = providerTableOf(parsePolicy(policyWith([{ id: 'corp', hosts: ['llm.corp.test'] }]), 'p'));
    expect(table.named('corp')).toMatchObject({
      label: 'corp',
      ports: [443],
      endpoints: [{ basePath: '', wire: 'openai-chat' }],
      price: 'unpriced',
      key: null,
    });
  });

  it('redeclared under a built-in id, take its place and keep its key name', () => {
    const table = providerTableOf(
      parsePolicy(
        policyWith([
          {
            id: 'google',
            hosts: ['gemini.proxy.test'],
            wire: 'gemini-generate',
            price: 'google',
            key: { env: 'GEMINI_API_KEY', header: 'x-goog-api-key' },
          },
        ]),
        'p',
      ),
    );
    expect(table.providers.filter((p) => p.id === 'google')).toHaveLength(1);
    expect(table.named('google')?.key).toMatchObject({ name: 'gemini', headers: [{ name: 'x-goog-api-key', bearer: false }] });
    expect(table.detect('generativelanguage.googleapis.com', 443, 'https', '/v1beta/models/g:generateContent')).toMatchObject({
      provider: 'google',
    });
  });

  it('are refused with a message that names the field and what it takes', () => {
    expect(errorOf([{ ...ACME, price: 'nosuch' }])).toBe(
      'policy policy.json is invalid: providers.0.price: a genai-prices provider id (such as mistral, groq or openai), "local" (runs locally, costs nothing) or "unpriced"',
    );
    expect(errorOf([{ ...ACME, wire: 'openai-chatt' }])).toMatch(
      /^policy policy\.json is invalid: providers\.0\.wire: .*a wire format: one of anthropic-messages, openai-chat/,
    );
    expect(errorOf([{ ...ACME, basePath: 'acme/' }])).toContain(
      'providers.0.basePath: empty, or a path such as /api/v1 that starts with / and does not end with one',
    );
    expect(errorOf([{ ...ACME, id: 'Acme' }])).toContain('providers.0.id: lowercase letters, digits and dashes, starting with a letter');
    expect(errorOf([{ ...ACME, hosts: [] }])).toContain('providers.0.hosts: at least one host');
    expect(errorOf([{ ...ACME, key: { env: 'acme key' } }])).toContain(
      'providers.0.key.env: an environment variable name, such as ACME_API_KEY',
    );
    expect(errorOf([{ ...ACME, key: { env: 'ACME_API_KEY', heder: 'x' } }])).toContain('providers.0.key');
    expect(errorOf([ACME, { ...ACME, hosts: ['other.test'] }])).toContain('providers.1.id: "acme" is named twice');
    expect(errorOf([{ ...ACME, ports: [0] }])).toContain('providers.0.ports.0');
  });
});
