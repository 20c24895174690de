import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsem, runCapsemAsync, type CliResult } from '../helpers/runCapsem.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The tool ledger with the official clients, each run by `capsem record` from a user's folder
// against a local upstream in its provider's wire format: an Ollama tool loop (results without a
// call id), two Gemini conversations side by side making the same call (no ids either), and an
// OpenAI conversation whose results are re-sent as history on every later turn.

const require = createRequire(import.meta.url);
const sdk = (name: string): string => JSON.stringify(pathToFileURL(require.resolve(name)).href);
const home = tempHome();
const upstreamHome = tempHome();
let upstream: Upstream;
let ollama: Server;
let env: NodeJS.ProcessEnv;

async function record(name: string, script: string): Promise<CliResult> {
  const file = join(upstreamHome.root, `${name}.mjs`);
  writeFileSync(file, script);
  const result = await runCapsemAsync(home.root, ['record', '--name', name, '--', process.execPath, file], env);
  expect(result.code, result.stderr).toBe(0);
  return result;
}

function rows<T>(session: string, sql: string): T[] {
  const id = (JSON.parse(runCapsem(home.root, ['list', '--json']).stdout) as { id: string; name: string }[]).find(
    (s) => s.name === session,
  )!.id;
  return sessionRows<T>(`${home.root}/run/sessions/${id}/session.db`, sql);
}

/** Answers an Ollama /api/chat: a tool call while the conversation has no tool result, then the answer. */
function ollamaChat(body: { model: string; messages: { role: string; tool_name?: string; content: string }[] }): unknown {
  const result = body.messages.find((m) => m.role === 'tool');
  const message = result
    ? { role: 'assistant', content: `It is ${result.content} in Oslo.` }
    : { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Oslo' } } }] };
  return {
    model: body.model,
    created_at: new Date().toISOString(),
    message,
    done: true,
    done_reason: 'stop',
    prompt_eval_count: 30,
    eval_count: 7,
  };
}

/** Gemini: a get_weather call for the city the conversation's first message names, until a functionResponse comes back. */
function geminiGenerate(body: {
  contents: { role: string; parts: { text?: string; functionResponse?: { response: { weather: string } } }[] }[];
}): unknown {
  const city = /in (\w+)/.exec(body.contents[0]!.parts[0]!.text ?? '')?.[1] ?? 'nowhere';
  const answered = body.contents.flatMap((c) => c.parts).find((p) => p.functionResponse)?.functionResponse;
  const parts = answered
    ? [{ text: `${city}: ${answered.response.weather}` }]
    : [{ functionCall: { name: 'get_weather', args: { city } } }];
  return {
    candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP' }],
    usageMetadata: { promptTokenCount: 40, candidatesTokenCount: 5, totalTokenCount: 45 },
    modelVersion: 'gemini-2.5-flash',
  };
}

/** OpenAI Chat: a new tool call per turn until the conversation holds two results, then the answer. */
function openaiChat(body: { model: string; messages: { role: string }[] }): unknown {
  const results = body.messages.filter((m) => m.role === 'tool').length;
  const message =
    results < 2
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `call_T${results + 1}`,
              type: 'function',
              function: { name: 'read_file', arguments: JSON.stringify({ path: `part${results + 1}.txt` }) },
            },
          ],
        }
      : { role: 'assistant', content: 'Both parts read.' };
  return {
    id: `chatcmpl-${results}`,
    object: 'chat.completion',
    created: 1,
    model: body.model,
    choices: [{ index: 0, message, finish_reason: results < 2 ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
  };
}

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, ['generativelanguage.googleapis.com', 'api.openai.com'], (req, body, res) => {
    if (req.url?.includes(':generateContent')) return json(res, 200, geminiGenerate(body as never));
    if (req.url === '/v1/chat/completions') return json(res, 200, openaiChat(body as never));
    json(res, 404, { error: 'no route' });
  });
  ollama = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => json(res, 200, ollamaChat(JSON.parse(text) as never)));
  });
  await new Promise<void>((r) => ollama.listen(0, '127.0.0.1', r));
  const caFile = join(upstreamHome.root, 'upstream-ca.pem');
  writeFileSync(caFile, upstream.caPem);
  env = {
    CAPSEM_RESOLVE: [
      ...['generativelanguage.googleapis.com', 'api.openai.com'].map((h) => `${h}:443=127.0.0.1:${upstream.port}`),
      `ollama.test:11434=127.0.0.1:${(ollama.address() as AddressInfo).port}`,
    ].join(','),
    CAPSEM_UPSTREAM_CA_FILE: caFile,
  };
}, 30_000);

afterAll(async () => {
  await upstream.close();
  ollama.close();
  home.remove();
  upstreamHome.remove();
});

describe('the tool ledger with real clients', () => {
  it('files an Ollama tool result, which carries no call id, under the call it answers, in one trace', async () => {
    await record(
      'ollama-loop',
      `
import { Ollama } from ${sdk('ollama')};
const ollama = new Ollama({ host: 'http://ollama.test:11434' });
const tools = [{ type: 'function', function: { name: 'get_weather', description: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
const messages = [{ role: 'user', content: 'Weather in Oslo?' }];
const first = await ollama.chat({ model: 'qwen3', messages, tools });
messages.push(first.message);
for (const call of first.message.tool_calls) messages.push({ role: 'tool', tool_name: call.function.name, content: 'rain' });
const second = await ollama.chat({ model: 'qwen3', messages, tools });
console.log(second.message.content);
`,
    );
    const calls = rows<{ call_id: string; status: string; trace_id: string }>(
      'ollama-loop',
      'SELECT call_id, status, trace_id FROM tool_calls',
    );
    const results = rows<{ call_id: string; trace_id: string; content_preview: string }>(
      'ollama-loop',
      'SELECT call_id, trace_id, content_preview FROM tool_responses',
    );
    expect(calls).toEqual([
      { call_id: expect.stringMatching(/^get_weather#0@[0-9a-f]{12}$/), status: 'responded', trace_id: expect.any(String) },
    ]);
    expect(results).toEqual([{ call_id: calls[0]!.call_id, trace_id: calls[0]!.trace_id, content_preview: 'rain' }]);
    expect(rows('ollama-loop', 'SELECT DISTINCT trace_id FROM model_calls')).toHaveLength(1);
    const check = runCapsem(home.root, ['check', 'ollama-loop']);
    expect(check.code, check.stdout).toBe(0);
  }, 60_000);

  it('keeps two Gemini conversations making the same call side by side in their own traces', async () => {
    await record(
      'gemini-pair',
      `
import { GoogleGenAI } from ${sdk('@google/genai')};
const ai = new GoogleGenAI({ apiKey: 'google-test-key' });
const config = { tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'weather', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } } } }] }] };
const ask = (text) => ai.models.generateContent({ model: 'gemini-2.5-flash', contents: [{ role: 'user', parts: [{ text }] }], config });
const answer = (text, first, weather) => ai.models.generateContent({ model: 'gemini-2.5-flash', config, contents: [
  { role: 'user', parts: [{ text }] },
  first.candidates[0].content,
  { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { weather } } }] },
] });
// Both conversations ask first, then B is answered before A: the order parallel sub-agents give.
const a = await ask('Weather in Oslo?');
const b = await ask('Weather in Paris?');
console.log((await answer('Weather in Paris?', b, 'sun')).text);
console.log((await answer('Weather in Oslo?', a, 'rain')).text);
`,
    );
    const calls = rows<{ call_id: string; arguments: string; trace_id: string; status: string }>(
      'gemini-pair',
      'SELECT call_id, arguments, trace_id, status FROM tool_calls ORDER BY id',
    );
    const results = rows<{ call_id: string; trace_id: string; content_preview: string }>(
      'gemini-pair',
      'SELECT call_id, trace_id, content_preview FROM tool_responses ORDER BY id',
    );
    const oslo = calls.find((c) => c.arguments.includes('Oslo'))!;
    const paris = calls.find((c) => c.arguments.includes('Paris'))!;
    expect(oslo.call_id).not.toBe(paris.call_id);
    expect(oslo.trace_id).not.toBe(paris.trace_id);
    expect(calls.map((c) => c.status)).toEqual(['responded', 'responded']);
    expect(results).toEqual([
      { call_id: paris.call_id, trace_id: paris.trace_id, content_preview: '{"weather":"sun"}' },
      { call_id: oslo.call_id, trace_id: oslo.trace_id, content_preview: '{"weather":"rain"}' },
    ]);
    const check = runCapsem(home.root, ['check', 'gemini-pair']);
    expect(check.code, check.stdout).toBe(0);
  }, 60_000);

  it('records each OpenAI tool result once, on the request that first carried it back, not again as history', async () => {
    await record(
      'openai-turns',
      `
import OpenAI from ${sdk('openai')};
const client = new OpenAI({ apiKey: 'sk-openai-test', maxRetries: 0 });
const tools = [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } } }];
const messages = [{ role: 'user', content: 'Read both parts.' }];
for (;;) {
  const reply = (await client.chat.completions.create({ model: 'gpt-4o', messages, tools })).choices[0].message;
  messages.push(reply);
  if (!reply.tool_calls) { console.log(reply.content); break; }
  for (const call of reply.tool_calls) messages.push({ role: 'tool', tool_call_id: call.id, content: 'contents of ' + JSON.parse(call.function.arguments).path });
}
`,
    );
    expect(rows('openai-turns', 'SELECT count(*) AS n FROM model_calls')).toEqual([{ n: 3 }]);
    const results = rows(
      'openai-turns',
      'SELECT r.call_id, m.seq - (SELECT min(seq) FROM model_calls) AS turn FROM tool_responses r JOIN model_calls m ON m.id = r.model_call_id ORDER BY r.id',
    );
    // Turn 2 carried call_T1's result back, turn 3 call_T2's; turn 3 also re-sent call_T1's as history.
    expect(results.map((r) => (r as { call_id: string }).call_id)).toEqual(['call_T1', 'call_T2']);
    expect(rows('openai-turns', "SELECT count(*) AS n FROM model_items WHERE kind = 'tool_response'")).toEqual([{ n: 2 }]);
    expect(rows('openai-turns', 'SELECT call_id, status FROM tool_calls ORDER BY id')).toEqual([
      { call_id: 'call_T1', status: 'responded' },
      { call_id: 'call_T2', status: 'responded' },
    ]);
    expect(rows('openai-turns', 'SELECT DISTINCT trace_id FROM model_calls')).toHaveLength(1);
  }, 60_000);
});
