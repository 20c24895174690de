import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicStream, hasToolResult, sse, startUpstream, type AnthropicBody, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsem, runCapsemAsync, type CliResult } from '../helpers/runCapsem.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The ledger of an Anthropic tool loop whose tool fails, recorded by `capsem record` from a user's
// folder with the official @anthropic-ai/sdk against a local upstream: the model reads a file,
// the tool's error goes back with is_error, the model answers; then a new question, whose stream
// the client abandons as soon as the model starts asking for a tool.

const home = tempHome();
const upstreamHome = tempHome();
const require = createRequire(import.meta.url);
const MODEL = 'claude-sonnet-4-20250514';
const FIRST = 'What does missing.txt say?';
const SECOND = 'Then read other.txt.';
const FAILURE = 'Error: ENOENT: no such file or directory, open missing.txt';
let upstream: Upstream;
let run: CliResult;

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, ['api.anthropic.com'], (_req, raw, res) => {
    const body = raw as AnthropicBody;
    const last = body.messages!.at(-1)!;
    if (last.content === SECOND) {
      const events = anthropicStream(MODEL, 'Reading it.', [{ id: 'toolu_02B', name: 'Read', input: { file_path: 'other.txt' } }], {
        input: 500,
        output: 30,
      });
      // Up to the first piece of the tool's arguments, then the model goes quiet.
      const toolStart = events.findIndex((e) => (e.data as { content_block?: { type: string } }).content_block?.type === 'tool_use');
      return sse(res, events, { stallAfter: toolStart + 2 });
    }
    if (hasToolResult(body)) return sse(res, anthropicStream(MODEL, 'The file is not there.', [], { input: 420, output: 9 }));
    return sse(
      res,
      anthropicStream(MODEL, 'I will read it.', [{ id: 'toolu_01A', name: 'Read', input: { file_path: 'missing.txt' } }], {
        input: 380,
        output: 40,
      }),
    );
  });
  const caFile = `${upstreamHome.root}/upstream-ca.pem`;
  writeFileSync(caFile, upstream.caPem);
  const sdk = pathToFileURL(require.resolve('@anthropic-ai/sdk')).href;
  const script = `${upstreamHome.root}/agent.mjs`;
  writeFileSync(
    script,
    `
    import Anthropic from ${JSON.stringify(sdk)};
    const client = new Anthropic({ apiKey: 'sk-ant-test', maxRetries: 0 });
    const tools = [{ name: 'Read', description: 'read a file', input_schema: { type: 'object', properties: { file_path: { type: 'string' } } } }];
    const ask = (messages) => client.messages.stream({ model: '${MODEL}', max_tokens: 1024, tools, messages });
    const messages = [{ role: 'user', content: ${JSON.stringify(FIRST)} }];
    const first = await ask(messages).finalMessage();
    messages.push({ role: 'assistant', content: first.content });
    messages.push({ role: 'user', content: first.content.filter((b) => b.type === 'tool_use').map((b) => ({ type: 'tool_result', tool_use_id: b.id, content: ${JSON.stringify(FAILURE)}, is_error: true })) });
    const second = await ask(messages).finalMessage();
    console.log('ANSWER ' + second.content.map((b) => b.text ?? '').join(''));
    const third = ask([{ role: 'user', content: ${JSON.stringify(SECOND)} }]);
    for await (const event of third) {
      if (event.type === 'content_block_start' && event.content_block.type === 'tool_use') {
        third.abort();
        break;
      }
    }
    console.log('ABANDONED');
  `,
  );
  run = await runCapsemAsync(home.root, ['record', '--name', 'tool-error', '--', process.execPath, script], {
    CAPSEM_RESOLVE: `api.anthropic.com:443=127.0.0.1:${upstream.port}`,
    CAPSEM_UPSTREAM_CA_FILE: caFile,
  });
}, 90_000);
afterAll(async () => {
  await upstream.close();
  home.remove();
  upstreamHome.remove();
});

let dbPath: string | undefined;
function rows<T>(sql: string): T[] {
  if (dbPath === undefined) {
    const [session] = JSON.parse(runCapsem(home.root, ['list', '--json']).stdout) as { id: string }[];
    dbPath = `${home.root}/run/sessions/${session!.id}/session.db`;
  }
  return sessionRows<T>(dbPath, sql);
}

describe('the ledger of an Anthropic tool loop whose tool fails, and a stream the client abandons', () => {
  it('runs the SDK to its end through the proxy', () => {
    expect(run.stdout, run.stderr).toContain('ANSWER The file is not there.');
    expect(run.stdout).toContain('ABANDONED');
    expect(run.code).toBe(0);
    expect(upstream.requests).toHaveLength(3);
  });

  it("records each call's prompt as what the user asked, never the tool's result", () => {
    expect(rows("SELECT content FROM model_items WHERE kind = 'request' ORDER BY model_call_id")).toEqual([
      { content: FIRST },
      { content: FIRST },
      { content: SECOND },
    ]);
    expect(rows("SELECT content FROM model_items WHERE kind = 'tool_response'")).toEqual([{ content: FAILURE }]);
  });

  it('leaves the call whose result is_error in error, with the error, and the one never finished requested', () => {
    expect(rows('SELECT call_id, status, error_message FROM tool_calls ORDER BY id')).toEqual([
      { call_id: 'toolu_01A', status: 'error', error_message: FAILURE },
      { call_id: 'toolu_02B', status: 'requested', error_message: null },
    ]);
    expect(rows('SELECT call_id, is_error FROM tool_responses')).toEqual([{ call_id: 'toolu_01A', is_error: 1 }]);
    expect(rows("SELECT status_code, error_kind FROM net_events WHERE path = '/v1/messages' ORDER BY seq")).toEqual([
      { status_code: 200, error_kind: null },
      { status_code: 200, error_kind: null },
      { status_code: 200, error_kind: 'client_canceled' },
    ]);
  });

  it('has capsem check note the abandoned stream with its cause, find nothing, and exit 0', () => {
    const note =
      '1 model API response was abandoned by the client before it ended (client_canceled: the client closed the connection before the response ended): everything that arrived is recorded';
    const check = runCapsem(home.root, ['check', 'tool-error']);
    expect(check.stdout).toContain('Findings: none');
    expect(check.stdout).toContain(`note: ${note}`);
    expect(check.code).toBe(0);
    const json = runCapsem(home.root, ['check', 'tool-error', '--json']);
    const report = JSON.parse(json.stdout) as { findings: unknown[]; notes: string[] };
    expect(report.findings).toEqual([]);
    expect(report.notes).toEqual([expect.stringContaining(note)]);
    expect(json.code).toBe(0);
  });
});
