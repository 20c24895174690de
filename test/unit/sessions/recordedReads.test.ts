import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ProviderTable } from '../../../electron/telemetry/providers/index.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { existingTables } from '../../../electron/store/rollup.ts';
import { searchBodies } from '../../../electron/sessions/bodySearch.ts';
import { checkSessionDb } from '../../../electron/sessions/sessionCheck.ts';
import { SessionEventStore } from '../../../electron/sessions/sessionEventStore.ts';
import { firstPromptTitle } from '../../../electron/sessions/sessionListFacts.ts';
import { readTimeline } from '../../../electron/sessions/timeline.ts';
import { modelExchange } from '../../helpers/exchanges.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// Readers read what was recorded: once a session is recorded, a later change to model detection
// (a path no endpoint claims any more, another that one now claims) changes nothing the timeline,
// `capsem check`, the events, search or the title say about it.

const home = tempHome();
afterAll(() => home.remove());

const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));
const PROMPT = 'Summarise the retry budget';
let dbPath: string;
let sessionId: string;

beforeAll(async () => {
  const live = await liveSession(home);
  const { recorder } = live;
  const request = { model: 'claude-sonnet-4-20250514', max_tokens: 64, messages: [{ role: 'user', content: PROMPT }] };
  const response = {
    id: 'msg_1',
    model: 'claude-sonnet-4-20250514',
    content: [{ type: 'text', text: 'It caps retries.' }],
    stop_reason: 'end_turn',
    usage: { input_tokens: 3, output_tokens: 4 },
  };
  await recorder.record(modelExchange('api.anthropic.com', '/v1/messages', json(request), json(response)));
  await recorder.record(modelExchange('api.anthropic.com', '/v1/messages/count_tokens', json(request), json({ input_tokens: 3 })));
  await live.end();
  dbPath = sessionPaths(home, live.id).dbPath;
  sessionId = live.id;
  // The later detection: /v1/messages is no model API, /v1/messages/count_tokens is Anthropic's.
  const detect = ProviderTable.prototype.detect;
  vi.spyOn(ProviderTable.prototype, 'detect').mockImplementation(function (this: ProviderTable, host, port, scheme, path) {
    if (path.startsWith('/v1/messages/count_tokens')) return detect.call(this, host, port, scheme, '/v1/messages');
    return path.startsWith('/v1/messages') ? null : detect.call(this, host, port, scheme, path);
  });
});

describe('a session read after detection changed', () => {
  it('still has its model call as an llm turn and host, and the other request as plain http', () => {
    const store = SessionEventStore.open(sessionId, dbPath);
    const timeline = readTimeline(store, true);
    store.close();
    expect(timeline.turns.map((t) => [t.model, t.finish])).toEqual([['claude-sonnet-4-20250514', 'end_turn']]);
    expect(timeline.hosts.map((h) => h.kind)).toEqual(['llm', 'http']);
  });

  it('is clean for capsem check: no call lost, none unaccounted for', () => {
    const report = checkSessionDb(dbPath);
    expect(report.findings).toEqual([]);
    expect(report.notes).toEqual([]);
  });

  it('serves the call with its conversation, finds its prompt, and titles the session by it', async () => {
    const store = SessionEventStore.open(sessionId, dbPath);
    try {
      const events = store.page(undefined, 100).map((ref) => store.event(ref, { full: true }));
      const request = events.find((e) => e.kind === 'model' && e.phase === 'request')!;
      expect(request.inference!.messages!.map((m) => [m.role, m.content])).toEqual([['user', PROMPT]]);
      expect(events.filter((e) => e.kind === 'http').map((e) => e.httpPath)).toEqual([
        '/v1/messages/count_tokens',
        '/v1/messages/count_tokens',
      ]);
      const found = await searchBodies(store, 'retry budget', () => false);
      expect(found!.seqs).toContain(request.seq);
      expect(firstPromptTitle(store, existingTables(store.db))).toBe(PROMPT);
    } finally {
      store.close();
    }
  });
});
