import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { Exchange, ExchangeError } from '../../../electron/proxy/exchange.ts';
import { SessionRecorder } from '../../../electron/recording/sessionRecorder.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { existingTables } from '../../../electron/store/rollup.ts';
import { checkSessionDb } from '../../../electron/sessions/sessionCheck.ts';
import { SessionEventStore } from '../../../electron/sessions/sessionEventStore.ts';
import { firstPromptTitle } from '../../../electron/sessions/sessionListFacts.ts';
import { providerNamed, requestView } from '../../../electron/telemetry/providers/index.ts';
import { modelExchange } from '../../helpers/exchanges.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { sessionRows } from '../../helpers/sessionRows.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The ledger as the recorder writes it from each official SDK's two-turn tool exchange, whose tool
// fails (test/fixtures/tool-exchanges.json): the prompt of both turns is what the user asked, never
// the tool's result; a result the provider's wire format marks failed leaves its call in error; and
// a response the client abandoned is a note of `capsem check`, not a finding.

interface RecordedExchange {
  readonly path: string;
  readonly request: unknown;
  readonly responseContentType: string;
  readonly response: unknown;
}
const FIXTURE = JSON.parse(readFileSync(new URL('../../fixtures/tool-exchanges.json', import.meta.url), 'utf8')) as {
  providers: Record<string, { sdk: string; exchanges: RecordedExchange[] }>;
};
const PROMPT = 'What does missing.txt say?';

const home = tempHome();
afterAll(() => home.remove());

function exchangeOf(provider: string, recorded: RecordedExchange, cut?: { bytes: number; error: ExchangeError | null }): Exchange {
  const whole = Buffer.from(typeof recorded.response === 'string' ? recorded.response : JSON.stringify(recorded.response));
  return modelExchange(
    providerNamed(provider)!.hosts[0]!,
    recorded.path,
    Buffer.from(JSON.stringify(recorded.request)),
    cut ? whole.subarray(0, cut.bytes) : whole,
    { responseHeaders: { 'content-type': recorded.responseContentType }, error: cut?.error ?? null },
  );
}

/** Records the exchanges into a new session, ends it, and gives its session.db. */
async function recordSession(exchanges: readonly Exchange[]): Promise<string> {
  const live = await liveSession(home);
  const recorder = new SessionRecorder(live.writer, 1 << 20);
  for (const ex of exchanges) await recorder.record(ex);
  await live.end();
  expect(recorder.failures).toBe(0);
  return sessionPaths(home, live.id).dbPath;
}

// Which wire formats mark a failed tool's result: Anthropic's tool_result is_error, Gemini's
// functionResponse with an "error" key. Chat Completions, Responses and Ollama have no such mark.
const CASES: [fixture: string, provider: string, failed: boolean][] = [
  ['anthropic', 'anthropic', true],
  ['openai-chat', 'openai', false],
  ['openai-responses', 'openai', false],
  ['google', 'google', true],
  ['ollama', 'ollama', false],
];

describe('the tool ledger of each official SDK whose tool fails', () => {
  for (const [fixture, provider, failed] of CASES) {
    const { sdk, exchanges } = FIXTURE.providers[fixture]!;
    it(`${sdk} (${exchanges[0]!.path}): both turns' prompt is the user's question, and the call reads ${failed ? 'error' : 'responded'}`, async () => {
      const db = await recordSession(exchanges.map((e) => exchangeOf(provider, e)));
      expect(
        sessionRows(db, "SELECT model_call_id AS call, content FROM model_items WHERE kind = 'request' ORDER BY model_call_id"),
      ).toEqual([
        { call: 1, content: PROMPT },
        { call: 2, content: PROMPT },
      ]);
      const [call] = sessionRows<{ status: string; error_message: string | null; call_id: string }>(
        db,
        'SELECT status, error_message, call_id FROM tool_calls',
      );
      const [result] = sessionRows<{ call_id: string; is_error: number; content_preview: string }>(
        db,
        'SELECT call_id, is_error, content_preview FROM tool_responses',
      );
      expect(result!.call_id).toBe(call!.call_id);
      expect(result!.content_preview).toMatch(/ENOENT: no such file or directory/);
      expect(result!.is_error).toBe(failed ? 1 : 0);
      expect(call).toMatchObject(
        failed ? { status: 'error', error_message: result!.content_preview } : { status: 'responded', error_message: null },
      );
      // The API's view of the second request: the result is a result, with its mark, and no user message says it.
      const view = requestView(provider, exchanges[1]!.path, exchanges[1]!.request);
      expect(view.toolResults).toEqual([
        { toolUseId: expect.any(String), content: result!.content_preview, ...(failed ? { isError: true } : {}) },
      ]);
      expect(view.messages.filter((m) => m.role === 'user').map((m) => m.content)).not.toContain(result!.content_preview);
      expect(checkSessionDb(db).findings).toEqual([]);
    });
  }
});

it("gives a session whose first user message has no words of its own no title from a tool's result", async () => {
  // Claude Code can open with reminders alone; the next user message is the tool's result.
  const [asking, answering] = FIXTURE.providers.anthropic!.exchanges;
  const reminder = { role: 'user', content: [{ type: 'text', text: '<system-reminder>Files changed.</system-reminder>' }] };
  const withoutWords = (e: RecordedExchange): RecordedExchange => {
    const request = e.request as { messages: unknown[] };
    return { ...e, request: { ...request, messages: [reminder, ...request.messages.slice(1)] } };
  };
  const db = await recordSession([asking!, answering!].map((e) => exchangeOf('anthropic', withoutWords(e))));
  expect(sessionRows(db, "SELECT content FROM model_items WHERE kind = 'request'")).toEqual([
    { content: '<system-reminder>Files changed.</system-reminder>' },
    { content: '<system-reminder>Files changed.</system-reminder>' },
  ]);
  const store = SessionEventStore.open('s', db);
  const tables = existingTables(store.db);
  expect(firstPromptTitle(store, tables)).toBeUndefined();
  store.close();
});

describe('a response cut short, as capsem check reads it', () => {
  const [asking] = FIXTURE.providers.anthropic!.exchanges;
  // The client stops reading just after the model started to ask for the tool.
  const cutAt = (asking!.response as string).indexOf('input_json_delta') + 200;
  const abandoned: ExchangeError = { kind: 'client_canceled', message: 'the client closed the connection before the response ended' };

  it('notes a stream the client abandoned, with its cause, and reports nothing it never finished asking for as a finding', async () => {
    const db = await recordSession([exchangeOf('anthropic', asking!, { bytes: cutAt, error: abandoned })]);
    expect(sessionRows(db, "SELECT json_extract(usage_details, '$.incomplete') AS incomplete, input_tokens FROM model_calls")).toEqual([
      { incomplete: 1, input_tokens: 380 },
    ]);
    expect(sessionRows(db, 'SELECT tool_name, status FROM tool_calls')).toEqual([{ tool_name: 'Read', status: 'requested' }]);
    const report = checkSessionDb(db);
    expect(report.findings).toEqual([]);
    expect(report.notes).toEqual([
      '1 model API response was abandoned by the client before it ended (client_canceled: the client closed the connection before the response ended): everything that arrived is recorded; what would have come after (the usage, the rest of the text, the tool calls still being asked for) never did, so nothing the recorder could keep was lost',
    ]);
  });

  it('still reports a call left unanswered when the response ended early with no cause recorded', async () => {
    const db = await recordSession([exchangeOf('anthropic', asking!, { bytes: cutAt, error: null })]);
    const report = checkSessionDb(db);
    expect(report.findings.map((f) => f.check)).toEqual(['orphaned tool_calls']);
    expect(report.notes).toEqual([]);
  });
});
