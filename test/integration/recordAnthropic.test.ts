import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicStream, sse, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsem, runCapsemAsync } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The official @anthropic-ai/sdk, run by `capsem record`, goes through the proxy to a local
// upstream that speaks the Messages API: a tool loop over two turns, streamed, the second gzipped.

const home = tempHome();
const upstreamHome = tempHome();
const require = createRequire(import.meta.url);
let upstream: Upstream;
let result: ReturnType<typeof runCapsem>;
const SECRET = 'sk-ant-test-SECRET-never-recorded';

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, ['api.anthropic.com'], (req, body, res, n) => {
    const messages = (body as { messages: { content: unknown }[] }).messages;
    if (n === 1)
      return sse(
        res,
        anthropicStream(
          'claude-sonnet-4-20250514',
          'I will look.',
          [
            { id: 'toolu_A1', name: 'Bash', input: { command: 'ls' } },
            { id: 'toolu_A2', name: 'Read', input: { file_path: 'README.md' } },
          ],
          { input: 1200, output: 80, cacheRead: 4000, cacheWrite: 300 },
        ),
      );
    expect(JSON.stringify(messages)).toContain('toolu_A1');
    return sse(res, anthropicStream('claude-sonnet-4-20250514', 'Done: two files.', [], { input: 1500, output: 20 }), { gzip: true });
  });
  const caFile = `${upstreamHome.root}/upstream-ca.pem`;
  writeFileSync(caFile, upstream.caPem);
  const sdk = pathToFileURL(require.resolve('@anthropic-ai/sdk')).href;
  const script = `${upstreamHome.root}/agent.mjs`;
  writeFileSync(
    script,
    `
    import Anthropic from ${JSON.stringify(sdk)};
    const client = new Anthropic({ apiKey: process.env.ANTHROPIC_API_KEY, maxRetries: 0 });
    const messages = [{ role: 'user', content: 'What files are here?' }];
    const tools = [{ name: 'Bash', description: 'run', input_schema: { type: 'object', properties: { command: { type: 'string' } } } },
                   { name: 'Read', description: 'read', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } } }];
    const first = await client.messages.stream({ model: 'claude-sonnet-4-20250514', max_tokens: 512, system: 'Be brief.', tools, messages }).finalMessage();
    messages.push({ role: 'assistant', content: first.content });
    messages.push({ role: 'user', content: first.content.filter((b) => b.type === 'tool_use').map((b) => ({ type: 'tool_result', tool_use_id: b.id, content: 'ok: ' + b.name })) });
    const second = await client.messages.stream({ model: 'claude-sonnet-4-20250514', max_tokens: 512, tools, messages }).finalMessage();
    console.log('FINAL ' + second.content.map((b) => b.text ?? '').join(''));
  `,
  );
  result = await runCapsemAsync(home.root, ['record', '--name', 'sdk-run', '--', process.execPath, script], {
    ANTHROPIC_API_KEY: SECRET,
    CAPSEM_RESOLVE: `api.anthropic.com:443=127.0.0.1:${upstream.port}`,
    CAPSEM_UPSTREAM_CA_FILE: caFile,
  });
}, 60_000);
afterAll(async () => {
  await upstream.close();
  home.remove();
  upstreamHome.remove();
});

const db = (): Database.Database => {
  const id = JSON.parse(runCapsem(home.root, ['list', '--json']).stdout)[0].id as string;
  return new Database(`${home.root}/run/sessions/${id}/session.db`, { readonly: true });
};

describe('capsem record with the official Anthropic SDK', () => {
  it('runs the program to its end through the proxy and exits with its code', () => {
    expect(result.stderr).toMatch(
      /capsem record: session [0-9a-f-]+ \(sdk-run\); proxy 127\.0\.0\.1:\d+ \(its credentials are in the command's HTTPS_PROXY\)\. No sandbox/,
    );
    expect(result.stdout).toContain('FINAL Done: two files.');
    expect(result.code).toBe(0);
    expect(upstream.requests).toHaveLength(2);
  });

  it('records both exchanges in net_events with hashed credentials and decoded bodies', () => {
    const d = db();
    const rows = d.prepare("SELECT * FROM net_events WHERE domain = 'api.anthropic.com' ORDER BY seq").all() as Record<string, unknown>[];
    expect(rows.map((r) => [r.method, r.path, r.status_code, r.decision, r.process_name])).toEqual([
      ['POST', '/v1/messages', 200, 'allowed', 'node'],
      ['POST', '/v1/messages', 200, 'allowed', 'node'],
    ]);
    const headers = JSON.parse(String(rows[0]!.request_headers)) as Record<string, string>;
    expect(headers.authorization ?? headers['x-api-key']).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(headers['user-agent']).toMatch(/^Anthropic\/JS /);
    expect(rows[1]!.bytes_received).toBeGreaterThan(0);
    const blob = d
      .prepare(
        "SELECT body, body_hash, content_encoding, original_bytes, stored_bytes FROM event_body_blobs WHERE event_id = ? AND direction = 'response'",
      )
      .get(rows[1]!.event_id) as {
      body: Buffer;
      body_hash: string;
      content_encoding: string;
      original_bytes: number;
      stored_bytes: number;
    };
    // The upstream gzipped this answer; on an exchange where the broker put the real key in, the
    // proxy decodes it to scrub any reflected key, so the client and the record both get it plain.
    expect(blob.content_encoding).toBeNull();
    expect(JSON.parse(String(rows[1]!.response_headers))['content-encoding']).toBeUndefined();
    expect(blob.body_hash).toBe(createHash('sha256').update(blob.body).digest('hex'));
    expect(blob.body.toString()).toContain('"text":"wo file"');
    expect(blob.stored_bytes).toBe(blob.body.length);
    d.close();
    expect(
      readFileSync(`${home.root}/run/sessions/${JSON.parse(runCapsem(home.root, ['list', '--json']).stdout)[0].id}/session.db`).includes(
        SECRET,
      ),
    ).toBe(false);
  });

  it('writes the model/tool ledger: two calls in one trace, two tool calls and their results', () => {
    const d = db();
    const calls = d.prepare('SELECT * FROM model_calls ORDER BY id').all() as Record<string, unknown>[];
    expect(
      calls.map((c) => [
        c.provider,
        c.model,
        c.stream,
        c.stop_reason,
        c.input_tokens,
        c.output_tokens,
        c.status_code,
        c.messages_count,
        c.tools_count,
      ]),
    ).toEqual([
      ['anthropic', 'claude-sonnet-4-20250514', 1, 'tool_use', 1200, 80, 200, 2, 2],
      ['anthropic', 'claude-sonnet-4-20250514', 1, 'end_turn', 1500, 20, 200, 3, 2],
    ]);
    expect(calls[0]!.text_content).toBe('I will look.');
    expect(calls[0]!.thinking_content).toBe('Let me check.');
    expect(JSON.parse(String(calls[0]!.usage_details))).toEqual({ cache_read: 4000, cache_write: 300 });
    // 1200 x $3 + 4000 x $0.30 + 300 x $3.75 + 80 x $15, per million tokens.
    expect(calls[0]!.estimated_cost_usd as number).toBeCloseTo((1200 * 3 + 4000 * 0.3 + 300 * 3.75 + 80 * 15) / 1e6, 9);
    expect(calls[0]!.trace_id).toBe(calls[1]!.trace_id);
    const tools = d
      .prepare('SELECT call_id, tool_name, arguments, call_index, model_call_id, origin, trace_id FROM tool_calls ORDER BY id')
      .all();
    expect(tools).toEqual([
      {
        call_id: 'toolu_A1',
        tool_name: 'Bash',
        arguments: '{"command":"ls"}',
        call_index: 0,
        model_call_id: calls[0]!.id,
        origin: 'native',
        trace_id: calls[0]!.trace_id,
      },
      {
        call_id: 'toolu_A2',
        tool_name: 'Read',
        arguments: '{"file_path":"README.md"}',
        call_index: 1,
        model_call_id: calls[0]!.id,
        origin: 'native',
        trace_id: calls[0]!.trace_id,
      },
    ]);
    const results = d.prepare('SELECT call_id, model_call_id, content_preview FROM tool_responses ORDER BY id').all();
    expect(results).toEqual([
      { call_id: 'toolu_A1', model_call_id: calls[1]!.id, content_preview: 'ok: Bash' },
      { call_id: 'toolu_A2', model_call_id: calls[1]!.id, content_preview: 'ok: Read' },
    ]);
    const items = d.prepare('SELECT kind, call_id FROM model_items WHERE model_call_id = ? ORDER BY item_index').all(calls[0]!.id);
    expect(items).toEqual([
      { kind: 'request', call_id: null },
      { kind: 'reasoning', call_id: null },
      { kind: 'response', call_id: null },
      { kind: 'tool_call', call_id: 'toolu_A1' },
      { kind: 'tool_call', call_id: 'toolu_A2' },
    ]);
    d.close();
  });

  it('leaves a session that capsem check finds clean and capsem list rolls up', () => {
    const check = runCapsem(home.root, ['check', 'sdk-run']);
    expect(check.stdout).toContain('Findings: none');
    expect(check.code).toBe(0);
    const [listed] = JSON.parse(runCapsem(home.root, ['list', '--json']).stdout);
    expect(listed).toMatchObject({
      name: 'sdk-run',
      status: 'stopped',
      totals: { modelCalls: 2, toolCalls: 2, inputTokens: 2700, outputTokens: 100 },
    });
  });
});
