import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, startUpstream, upstreamEnv, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsem, runCapsemAsync } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { writeHomePolicy } from '../helpers/homePolicy.ts';

// The official openai SDK, run by `capsem record`, pointed at three providers that all speak Chat
// Completions: Mistral (built in), Acme (named in the policy file, priced as a catalog provider, its
// key brokered) and Corp (named in the policy file, unpriced). Each call is recorded under its
// provider, not as OpenAI; the upstream sees the real keys and the program only stand-ins.

const home = tempHome();
const upstreamHome = tempHome();
const require = createRequire(import.meta.url);
let upstream: Upstream;
let result: Awaited<ReturnType<typeof runCapsemAsync>>;
const MISTRAL_KEY = 'mistral-REAL-key-0123456789abcdefABCDEF';
const ACME_KEY = 'acme-REAL-key-0123456789abcdefABCDEFGHIJ';
const HOSTS = ['api.mistral.ai', 'llm.acme.test', 'llm.corp.test'];

const answer = (model: string, text: string) => ({
  id: `chatcmpl-${model}`,
  object: 'chat.completion',
  model,
  choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1_000_000, completion_tokens: 0, total_tokens: 1_000_000 },
});

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, HOSTS, (req, body, res) => {
    const model = (body as { model: string }).model;
    return json(res, 200, answer(model, `${req.headers.host} ok`));
  });
  writeHomePolicy(home, () => ({
    providers: [
      {
        id: 'acme',
        label: 'Acme',
        hosts: ['llm.acme.test'],
        basePath: '/acme',
        price: 'openai',
        key: { env: 'ACME_API_KEY', standInPrefix: 'acme-' },
      },
      { id: 'corp', hosts: ['llm.corp.test'] },
    ],
  }));
  const sdk = JSON.stringify(pathToFileURL(require.resolve('openai')).href);
  const script = `${upstreamHome.root}/agent.mjs`;
  writeFileSync(
    script,
    `
    import OpenAI from ${sdk};
    const ask = async (baseURL, apiKey, model) => {
      const client = new OpenAI({ baseURL, apiKey, maxRetries: 0 });
      const r = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
      return r.choices[0].message.content;
    };
    console.log('KEYS ' + JSON.stringify({ mistral: process.env.MISTRAL_API_KEY, acme: process.env.ACME_API_KEY }));
    console.log('ANSWER ' + await ask('https://api.mistral.ai/v1', process.env.MISTRAL_API_KEY, 'mistral-small-latest'));
    console.log('ANSWER ' + await ask('https://llm.acme.test/acme/v1', process.env.ACME_API_KEY, 'gpt-4o-mini'));
    console.log('ANSWER ' + await ask('https://llm.corp.test/v1', 'corp-token', 'corp-model-1'));
  `,
  );
  result = await runCapsemAsync(home.root, ['record', '--name', 'providers', '--', process.execPath, script], {
    MISTRAL_API_KEY: MISTRAL_KEY,
    ACME_API_KEY: ACME_KEY,
    ...upstreamEnv(upstream, HOSTS, upstreamHome.root),
  });
}, 60_000);
afterAll(async () => {
  await upstream.close();
  home.remove();
  upstreamHome.remove();
});

const rows = (sql: string): Record<string, unknown>[] => {
  const id = JSON.parse(runCapsem(home.root, ['list', '--json']).stdout)[0].id as string;
  const db = new Database(`${home.root}/run/sessions/${id}/session.db`, { readonly: true });
  try {
    return db.prepare(sql).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
};

describe('capsem record with providers beyond OpenAI that speak its API', () => {
  it('runs the program to the end, which sees only stand-ins while the upstream gets the real keys', () => {
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.match(/^ANSWER .*/gm)).toEqual(['ANSWER api.mistral.ai ok', 'ANSWER llm.acme.test ok', 'ANSWER llm.corp.test ok']);
    const seen = JSON.parse(/^KEYS (.*)$/m.exec(result.stdout)![1]!) as { mistral: string; acme: string };
    expect(seen.mistral).not.toBe(MISTRAL_KEY);
    expect(seen.mistral).toHaveLength(MISTRAL_KEY.length);
    expect(seen.acme).toMatch(/^acme-/);
    expect(seen.acme).not.toBe(ACME_KEY);
    expect(upstream.requests.map((r) => [r.headers.host, r.path, r.headers.authorization])).toEqual([
      ['api.mistral.ai', '/v1/chat/completions', `Bearer ${MISTRAL_KEY}`],
      ['llm.acme.test', '/acme/v1/chat/completions', `Bearer ${ACME_KEY}`],
      ['llm.corp.test', '/v1/chat/completions', 'Bearer corp-token'],
    ]);
  });

  it('records each call under its provider and wire, priced from the catalog or marked unpriced (its cost unknown)', () => {
    const calls = rows('SELECT provider, wire, model, input_tokens, estimated_cost_usd, usage_details FROM model_calls ORDER BY seq');
    expect(calls).toEqual([
      {
        provider: 'mistral',
        wire: 'openai-chat',
        model: 'mistral-small-latest',
        input_tokens: 1_000_000,
        estimated_cost_usd: 0.1,
        usage_details: '{}',
      },
      {
        provider: 'acme',
        wire: 'openai-chat',
        model: 'gpt-4o-mini',
        input_tokens: 1_000_000,
        estimated_cost_usd: 0.15,
        usage_details: '{}',
      },
      {
        provider: 'corp',
        wire: 'openai-chat',
        model: 'corp-model-1',
        input_tokens: 1_000_000,
        estimated_cost_usd: 0,
        usage_details: '{"pricing":"unpriced"}',
      },
    ]);
    const substituted = rows('SELECT provider, host, outcome FROM substitution_events ORDER BY id');
    expect(substituted).toEqual([
      { provider: 'mistral', host: 'api.mistral.ai', outcome: 'substituted' },
      { provider: 'acme', host: 'llm.acme.test', outcome: 'substituted' },
    ]);
    const recorded = JSON.stringify(rows('SELECT request_headers FROM net_events'));
    expect(recorded).not.toContain(MISTRAL_KEY);
    expect(recorded).not.toContain(ACME_KEY);
  });

  it('leaves a session capsem check finds clean, with a note for the unpriced call', () => {
    const check = runCapsem(home.root, ['check', 'providers']);
    expect(check.stdout).toContain('Findings: none');
    expect(check.stdout).toContain(
      'note: 1 model call was served by a provider with no known price (corp: 1): its cost is unknown (recorded as 0, marked unpriced in usage_details)',
    );
    expect(check.code).toBe(0);
  });
});
