import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openaiChatStream, sse, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsem, runCapsemAsync, type CliResult } from '../helpers/runCapsem.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';

// What `capsem check` says about sessions where the recorder lost nothing, though the session
// lacks something: the official OpenAI SDK, run by `capsem record` from a user's folder, streams
// without asking for usage (the SDK's default), gives up on a request before any answer, and
// reads a stream its upstream cuts. Each is a note with its cause, and check exits 0.

const home = tempHome();
const upstreamHome = tempHome();
const require = createRequire(import.meta.url);
const STALLED = `${upstreamHome.root}/stalled`;
let upstream: Upstream;
const runs: Record<string, CliResult> = {};

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, ['api.openai.com'], (_req, body, res) => {
    const prompt = (body as { messages: { content: string }[] }).messages[0]!.content;
    // Holds the request unanswered and tells the client it arrived, so it gives up before any header.
    if (prompt === 'stall') return void writeFileSync(STALLED, '');
    const events = openaiChatStream('gpt-4o-2024-08-06', 'Hello from a stream that reports no usage.');
    return sse(res, events, prompt === 'cut' ? { cutAfter: 3 } : {});
  });
  const caFile = `${upstreamHome.root}/upstream-ca.pem`;
  writeFileSync(caFile, upstream.caPem);
  const sdk = pathToFileURL(require.resolve('openai')).href;
  const script = `${upstreamHome.root}/agent.mjs`;
  writeFileSync(
    script,
    `
    import OpenAI from ${JSON.stringify(sdk)};
    import { existsSync } from 'node:fs';
    const client = new OpenAI({ apiKey: 'sk-test', maxRetries: 0 });
    const scenario = process.argv[2];
    const ask = (content, options) => client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content }], stream: true }, options);
    if (scenario === 'stall') {
      const abort = new AbortController();
      const pending = ask('stall', { signal: abort.signal });
      while (!existsSync(process.env.STALLED)) await new Promise((r) => setTimeout(r, 20));
      abort.abort();
      await pending.then(() => console.log('ANSWERED'), (err) => console.log('ABORTED ' + err.name));
    } else {
      let text = '';
      try {
        for await (const chunk of await ask(scenario)) text += chunk.choices[0]?.delta?.content ?? '';
        console.log('TEXT ' + text);
      } catch (err) {
        console.log('BROKEN ' + err.message);
      }
    }
  `,
  );
  const env = { CAPSEM_RESOLVE: `api.openai.com:443=127.0.0.1:${upstream.port}`, CAPSEM_UPSTREAM_CA_FILE: caFile, STALLED };
  for (const scenario of ['plain', 'stall', 'cut']) {
    runs[scenario] = await runCapsemAsync(home.root, ['record', '--name', scenario, '--', process.execPath, script, scenario], env, {
      timeoutMs: 60_000,
    });
  }
}, 120_000);
afterAll(async () => {
  await upstream.close();
  home.remove();
  upstreamHome.remove();
});

function rows<T>(name: string, sql: string): T[] {
  const id = (JSON.parse(runCapsem(home.root, ['list', '--json']).stdout) as { id: string; name: string }[]).find(
    (s) => s.name === name,
  )!.id;
  return sessionRows<T>(`${home.root}/run/sessions/${id}/session.db`, sql);
}

describe('capsem check on what real clients do', () => {
  it('accepts an OpenAI stream that reports no usage because the request did not ask for it', () => {
    expect(runs.plain!.stdout, runs.plain!.stderr).toContain('TEXT Hello from a stream that reports no usage.');
    expect(upstream.requests[0]!.body).not.toHaveProperty('stream_options');
    const check = runCapsem(home.root, ['check', 'plain']);
    expect(check.stdout).toContain('Findings: none');
    expect(check.stdout).toMatch(
      /note: 1 streamed model call has no token counts because the provider reported none \(an OpenAI Chat Completions stream reports usage only when the request sets stream_options\.include_usage\)/,
    );
    expect(check.code).toBe(0);
    expect(rows('plain', 'SELECT input_tokens, output_tokens, usage_details FROM model_calls')).toEqual([
      { input_tokens: null, output_tokens: null, usage_details: '{"usage":"unreported"}' },
    ]);
  });

  it('does not count a request the client abandoned before any answer as a lost model call', () => {
    expect(runs.stall!.stdout, runs.stall!.stderr).toContain('ABORTED');
    expect(rows('stall', "SELECT status_code, error_kind FROM net_events WHERE path = '/v1/chat/completions'")).toEqual([
      { status_code: null, error_kind: 'client_canceled' },
    ]);
    expect(rows('stall', 'SELECT count(*) AS n FROM model_calls')).toEqual([{ n: 0 }]);
    const check = runCapsem(home.root, ['check', 'stall']);
    expect(check.stdout).toContain('Findings: none');
    expect(check.stdout).toMatch(
      /note: 1 model API request ended before any response \(client_canceled: 1\): nothing came back, so there is no model call to record/,
    );
    expect(check.code).toBe(0);
  });

  it('notes a stream the upstream cut, with what cut it, as a loss of the stream and not of the recorder', () => {
    expect(runs.cut!.stdout, runs.cut!.stderr).toContain('BROKEN');
    const [exchange] = rows<{ error_kind: string; error_message: string }>(
      'cut',
      "SELECT error_kind, error_message FROM net_events WHERE path = '/v1/chat/completions'",
    );
    expect(exchange!.error_kind).toMatch(/^(upstream_error|client_canceled)$/);
    expect(rows('cut', 'SELECT input_tokens, usage_details FROM model_calls')).toEqual([
      { input_tokens: null, usage_details: '{"incomplete":true}' },
    ]);
    const check = runCapsem(home.root, ['check', 'cut']);
    expect(check.stdout).toContain('Findings: none');
    expect(check.stdout).toContain(`(${exchange!.error_kind}: ${exchange!.error_message}): everything that arrived is recorded`);
    expect(check.stdout).not.toMatch(/gzip/i);
    expect(check.code).toBe(0);
  });
});
