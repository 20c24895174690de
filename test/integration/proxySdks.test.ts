import Database from 'better-sqlite3';
import { GoogleGenAI } from '@google/genai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import { ProxyAgent, setGlobalDispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSessionDb } from '../../electron/sessions/sessionCheck.ts';
import { startRecording, type Recording } from '../../electron/recording/sessionRecording.ts';
import { sessionPaths } from '../../electron/store/paths.ts';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { json, sse, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { writeFileSync } from 'node:fs';

// The official OpenAI, Google GenAI and MCP SDKs, in this process, with Node's fetch sent
// through the recording proxy (as `capsem record` does for a Node program), against local
// upstreams that speak each wire format.

const home = tempHome();
const upstreamHome = tempHome();
let upstream: Upstream;
let recording: Recording;

function openaiHandler(path: string, body: Record<string, unknown>, res: Parameters<Parameters<typeof startUpstream>[2]>[2]): void {
  if (path === '/v1/chat/completions' && body.stream) {
    const chunks = [
      {
        id: 'chatcmpl-9',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'gpt-4o-2024-08-06',
        choices: [{ index: 0, delta: { role: 'assistant', content: 'Checking ' }, finish_reason: null }],
      },
      {
        id: 'chatcmpl-9',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'gpt-4o-2024-08-06',
        choices: [
          {
            index: 0,
            delta: {
              tool_calls: [{ index: 0, id: 'call_W1', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }],
            },
            finish_reason: null,
          },
        ],
      },
      {
        id: 'chatcmpl-9',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'gpt-4o-2024-08-06',
        choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }, finish_reason: null }],
      },
      {
        id: 'chatcmpl-9',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'gpt-4o-2024-08-06',
        choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }],
      },
      {
        id: 'chatcmpl-9',
        object: 'chat.completion.chunk',
        created: 1,
        model: 'gpt-4o-2024-08-06',
        choices: [],
        usage: { prompt_tokens: 300, completion_tokens: 12, total_tokens: 312, prompt_tokens_details: { cached_tokens: 100 } },
      },
    ];
    return sse(res, [...chunks.map((data) => ({ data })), { data: '[DONE]' }]);
  }
  if (path === '/v1/chat/completions') {
    return json(
      res,
      200,
      {
        id: 'chatcmpl-10',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4o-2024-08-06',
        choices: [{ index: 0, message: { role: 'assistant', content: 'It rains in Oslo.' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 340, completion_tokens: 6, total_tokens: 346 },
      },
      { gzip: true },
    );
  }
  return json(res, 200, {
    id: 'resp_1',
    object: 'response',
    created_at: 1,
    status: 'completed',
    model: 'gpt-4.1',
    output: [
      {
        type: 'message',
        id: 'msg_1',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'Hello from Responses', annotations: [] }],
      },
    ],
    usage: {
      input_tokens: 20,
      output_tokens: 4,
      total_tokens: 24,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
    },
  });
}

beforeAll(async () => {
  upstream = await startUpstream(
    upstreamHome,
    ['api.openai.com', 'generativelanguage.googleapis.com', 'mcp.example.test'],
    (req, body, res) => {
      const host = String(req.headers.host ?? '');
      const path = (req.url ?? '').split('?')[0]!;
      if (host.startsWith('api.openai.com')) return openaiHandler(path, body as Record<string, unknown>, res);
      if (host.startsWith('generativelanguage')) {
        return sse(res, [
          { data: { candidates: [{ content: { role: 'model', parts: [{ text: 'Listing ' }] } }], modelVersion: 'gemini-2.5-flash' } },
          {
            data: {
              candidates: [
                {
                  content: { role: 'model', parts: [{ functionCall: { name: 'list_files', args: { dir: '/root' } } }] },
                  finishReason: 'STOP',
                },
              ],
              usageMetadata: { promptTokenCount: 50, candidatesTokenCount: 8, totalTokenCount: 58 },
              modelVersion: 'gemini-2.5-flash',
            },
          },
        ]);
      }
      if (req.method !== 'POST') return json(res, 405, { error: 'no stream' });
      const rpc = body as { id?: number; method: string; params?: { name?: string; arguments?: { text?: string } } };
      if (rpc.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      const result =
        rpc.method === 'initialize'
          ? { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'mock-mcp', version: '1.0.0' } }
          : rpc.method === 'tools/list'
            ? {
                tools: [
                  { name: 'echo', description: 'echo text', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } },
                ],
              }
            : { content: [{ type: 'text', text: `echo: ${rpc.params?.arguments?.text ?? ''}` }] };
      json(res, 200, { jsonrpc: '2.0', id: rpc.id, result });
    },
  );
  const caFile = `${upstreamHome.root}/ca.pem`;
  writeFileSync(caFile, upstream.caPem);
  recording = await startRecording(home, {
    name: 'sdks',
    command: ['vitest'],
    origin: { processName: 'node' },
    env: {
      ...process.env,
      CAPSEM_RESOLVE: ['api.openai.com', 'generativelanguage.googleapis.com', 'mcp.example.test']
        .map((h) => `${h}:443=127.0.0.1:${upstream.port}`)
        .join(','),
      CAPSEM_UPSTREAM_CA_FILE: caFile,
    },
  });
  setGlobalDispatcher(new ProxyAgent({ uri: recording.proxy.url, requestTls: { ca: (await CertificateAuthority.load(home)).certPem } }));
}, 30_000);
afterAll(async () => {
  await upstream.close();
  home.remove();
  upstreamHome.remove();
});

describe('official SDKs through the proxy', () => {
  it('OpenAI chat completions: a streamed tool call, then the tool result and a gzipped answer', async () => {
    const client = new OpenAI({ apiKey: 'sk-openai-secret', maxRetries: 0 });
    const tools = [
      {
        type: 'function' as const,
        function: { name: 'get_weather', description: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
      },
    ];
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Oslo?' }];
    const stream = await client.chat.completions.create({
      model: 'gpt-4o',
      messages,
      tools,
      stream: true,
      stream_options: { include_usage: true },
    });
    let args = '';
    let id = '';
    for await (const chunk of stream) {
      const call = chunk.choices[0]?.delta.tool_calls?.[0];
      if (call?.id) id = call.id;
      args += call?.function?.arguments ?? '';
    }
    expect([id, args]).toEqual(['call_W1', '{"city":"Oslo"}']);
    messages.push(
      { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'get_weather', arguments: args } }] },
      { role: 'tool', tool_call_id: id, content: 'rain' },
    );
    const answer = await client.chat.completions.create({ model: 'gpt-4o', messages, tools });
    expect(answer.choices[0]!.message.content).toBe('It rains in Oslo.');
  });

  it('OpenAI Responses API', async () => {
    const client = new OpenAI({ apiKey: 'sk-openai-secret', maxRetries: 0 });
    const r = await client.responses.create({ model: 'gpt-4.1', input: 'Say hello' });
    expect(r.output_text).toBe('Hello from Responses');
  });

  it('Google GenAI streamGenerateContent with a function call', async () => {
    const ai = new GoogleGenAI({ apiKey: 'google-secret-key' });
    const stream = await ai.models.generateContentStream({
      model: 'gemini-2.5-flash',
      contents: 'List my files',
      config: {
        tools: [
          {
            functionDeclarations: [
              {
                name: 'list_files',
                description: 'ls',
                parameters: { type: 'OBJECT' as never, properties: { dir: { type: 'STRING' as never } } },
              },
            ],
          },
        ],
      },
    });
    const calls: string[] = [];
    for await (const chunk of stream) for (const c of chunk.functionCalls ?? []) calls.push(c.name ?? '');
    expect(calls).toEqual(['list_files']);
  });

  it('MCP over Streamable HTTP: initialize, list and call a tool', async () => {
    const client = new Client({ name: 'capsem-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('https://mcp.example.test/mcp')));
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['echo']);
    const result = await client.callTool({ name: 'echo', arguments: { text: 'hello mcp' } });
    expect(result.content).toEqual([{ type: 'text', text: 'echo: hello mcp' }]);
    await client.close();
  });

  it('records every column a user sees, in one ledger, and check finds only the unanswered call', async () => {
    await recording.stop({ status: 'stopped' });
    const dbPath = sessionPaths(home, recording.session.id).dbPath;
    const db = new Database(dbPath, { readonly: true });
    const calls = db
      .prepare(
        'SELECT provider, model, stream, stop_reason, input_tokens, output_tokens, usage_details, text_content, estimated_cost_usd > 0 AS priced, status_code FROM model_calls ORDER BY id',
      )
      .all();
    expect(calls).toEqual([
      {
        provider: 'openai',
        model: 'gpt-4o',
        stream: 1,
        stop_reason: 'tool_calls',
        input_tokens: 200,
        output_tokens: 12,
        usage_details: '{"cache_read":100}',
        text_content: 'Checking ',
        priced: 1,
        status_code: 200,
      },
      {
        provider: 'openai',
        model: 'gpt-4o',
        stream: 0,
        stop_reason: 'stop',
        input_tokens: 340,
        output_tokens: 6,
        usage_details: '{}',
        text_content: 'It rains in Oslo.',
        priced: 1,
        status_code: 200,
      },
      {
        provider: 'openai',
        model: 'gpt-4.1',
        stream: 0,
        stop_reason: 'completed',
        input_tokens: 20,
        output_tokens: 4,
        usage_details: '{"cache_read":0,"thinking":0}',
        text_content: 'Hello from Responses',
        priced: 1,
        status_code: 200,
      },
      {
        provider: 'google',
        model: 'gemini-2.5-flash',
        stream: 1,
        stop_reason: 'STOP',
        input_tokens: 50,
        output_tokens: 8,
        usage_details: '{}',
        text_content: 'Listing ',
        priced: 1,
        status_code: 200,
      },
    ]);
    const toolRows = db
      .prepare('SELECT call_id, tool_name, arguments, origin, status, server_name, method FROM tool_calls ORDER BY id')
      .all() as Record<string, unknown>[];
    // Its result was carried back by the next request: the call reads as answered.
    expect(toolRows[0]).toEqual({
      call_id: 'call_W1',
      tool_name: 'get_weather',
      arguments: '{"city":"Oslo"}',
      origin: 'native',
      status: 'responded',
      server_name: null,
      method: null,
    });
    expect(toolRows[1]).toMatchObject({ tool_name: 'list_files', arguments: '{"dir":"/root"}', origin: 'native' });
    expect(toolRows[2]).toMatchObject({
      tool_name: 'echo',
      arguments: '{"text":"hello mcp"}',
      origin: 'mcp',
      status: 'responded',
      server_name: 'mock-mcp',
      method: 'tools/call',
    });
    const results = db.prepare('SELECT call_id, content_preview FROM tool_responses').all();
    expect(results).toEqual([{ call_id: 'call_W1', content_preview: 'rain' }]);
    const traces = db.prepare("SELECT DISTINCT trace_id FROM model_calls WHERE provider = 'openai' AND model = 'gpt-4o'").all();
    expect(traces).toHaveLength(1);
    const mcpFacts = db
      .prepare("SELECT event_type, json_extract(event_json, '$.method') AS method FROM security_rule_events ORDER BY id")
      .all();
    expect(mcpFacts).toEqual(
      expect.arrayContaining([
        { event_type: 'mcp.event', method: 'initialize' },
        { event_type: 'mcp.tool_list', method: 'tools/list' },
        { event_type: 'mcp.tool_call', method: 'tools/call' },
      ]),
    );
    const hosts = db.prepare('SELECT DISTINCT domain FROM net_events ORDER BY domain').all();
    expect(hosts).toEqual([{ domain: 'api.openai.com' }, { domain: 'generativelanguage.googleapis.com' }, { domain: 'mcp.example.test' }]);
    const raw = db
      .prepare('SELECT request_headers FROM net_events')
      .all()
      .map((r) => String((r as { request_headers: string }).request_headers))
      .join('\n');
    expect(raw).not.toMatch(/sk-openai-secret|google-secret-key/);
    db.close();
    // The Gemini call asked for list_files and this test never answered it: check says exactly that.
    expect(checkSessionDb(dbPath).findings.map((f) => [f.check, f.samples])).toEqual([
      ['orphaned tool_calls', [expect.stringMatching(/^list_files#0@[0-9a-f]{12} list_files$/)]],
    ]);
  });
});
