import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionEventStore } from '../../../electron/sessions/sessionEventStore.ts';
import { readTimeline } from '../../../electron/sessions/timeline.ts';
import { EMPTY_BODY, type Exchange } from '../../../electron/proxy/exchange.ts';
import { SessionRecorder } from '../../../electron/recording/sessionRecorder.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { checkSessionDb } from '../../../electron/sessions/sessionCheck.ts';
import { modelExchange } from '../../helpers/exchanges.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The recorder, `capsem check` and the timeline must agree on which requests are model calls: a
// client whose base URL already ends in /v1 posts to bare /messages, and Gemini's preview API is
// /v1alpha. Each is recorded here through the recorder and read back by the other two.

const home = tempHome();
afterAll(() => home.remove());

const bytes = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
const CALLS: { host: string; path: string; request: unknown; response: unknown }[] = [
  {
    host: 'api.anthropic.com',
    path: '/messages',
    request: { model: 'claude-sonnet-4-20250514', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] },
    response: {
      id: 'msg_1',
      model: 'claude-sonnet-4-20250514',
      content: [{ type: 'text', text: 'hello' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 3, output_tokens: 1 },
    },
  },
  {
    host: 'generativelanguage.googleapis.com',
    path: '/v1alpha/models/gemini-2.5-flash:generateContent',
    request: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
    response: {
      candidates: [{ content: { parts: [{ text: 'hello' }] }, finishReason: 'STOP' }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 1 },
      modelVersion: 'gemini-2.5-flash',
    },
  },
  {
    host: 'api.openai.com',
    path: '/chat/completions?api-version=1',
    request: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
    response: {
      id: 'c1',
      model: 'gpt-4o',
      choices: [{ message: { content: 'hello' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 3, completion_tokens: 1 },
    },
  },
];

const exchangeOf = (call: (typeof CALLS)[number]): Exchange =>
  modelExchange(call.host, call.path, bytes(call.request), bytes(call.response));

let dbPath: string;
let sessionId: string;
beforeAll(async () => {
  const live = await liveSession(home);
  const recorder = new SessionRecorder(live.writer, 1 << 20);
  for (const call of CALLS) await recorder.record(exchangeOf(call));
  const notModel = { ...exchangeOf(CALLS[0]!), path: '/v1/messages/count_tokens', responseBody: EMPTY_BODY };
  await recorder.record(notModel);
  await live.end();
  dbPath = sessionPaths(home, live.id).dbPath;
  sessionId = live.id;
});

describe('model API paths beyond /v1', () => {
  it('are recorded as model calls, and capsem check finds the session clean', () => {
    const db = new Database(dbPath, { readonly: true });
    const calls = db.prepare('SELECT provider, path FROM model_calls ORDER BY seq').all();
    db.close();
    expect(calls).toEqual([
      { provider: 'anthropic', path: '/messages' },
      { provider: 'google', path: '/v1alpha/models/gemini-2.5-flash:generateContent' },
      { provider: 'openai', path: '/chat/completions?api-version=1' },
    ]);
    const report = checkSessionDb(dbPath);
    expect(report.findings).toEqual([]);
    expect(report.notes).toEqual([]);
  });

  it('show on the timeline as model calls', () => {
    const store = SessionEventStore.open(sessionId, dbPath);
    const timeline = readTimeline(store, true);
    store.close();
    expect(timeline.hosts.map((h) => [h.host, h.kind])).toEqual([
      ['api.anthropic.com', 'llm'],
      ['generativelanguage.googleapis.com', 'llm'],
      ['api.openai.com', 'llm'],
      ['api.anthropic.com', 'http'],
    ]);
  });

  it('count for capsem check when their model call was lost', () => {
    const copy = `${home.root}/lost-calls.db`;
    const db = new Database(dbPath);
    db.prepare('VACUUM INTO ?').run(copy);
    db.close();
    const lossy = new Database(copy);
    lossy.exec('DELETE FROM model_calls');
    lossy.close();
    const correlation = checkSessionDb(copy).findings.filter((f) => f.check === 'AI provider correlation');
    // The recorder's rows say which exchanges were model calls (their trace), not which provider's.
    expect(correlation.map((f) => [f.message, f.samples.toSorted()])).toEqual([
      [
        '3 model API requests answered in net_events but 0 model_calls',
        [
          'api.anthropic.com/messages',
          'api.openai.com/chat/completions?api-version=1',
          'generativelanguage.googleapis.com/v1alpha/models/gemini-2.5-flash:generateContent',
        ],
      ],
    ]);
  });
});
