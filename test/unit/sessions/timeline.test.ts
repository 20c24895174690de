import { afterAll, describe, expect, it } from 'vitest';
import { requestSeqOf } from '../../../electron/sessions/eventSeq.ts';
import { SessionEventStore } from '../../../electron/sessions/sessionEventStore.ts';
import { buildTimeline, readTimeline, toolPreview } from '../../../electron/sessions/timeline.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { anthropicExchange } from '../../helpers/exchanges.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());

const at = (s: number): string => new Date(Date.UTC(2026, 10, 29, 10, 0, s)).toISOString();
const input = {
  sessionId: 's',
  lastSeq: 9,
  truncated: false,
  ended: false,
  modelCalls: [
    { seq: 1, timestamp: at(0), duration_ms: 2000, status_code: 200, stop_reason: 'tool_use', model: 'claude' },
    { seq: 5, timestamp: at(10), duration_ms: 1000, status_code: 529 },
  ],
  toolCalls: [
    { seq: 2, timestamp: at(2), call_id: 'a', tool_name: 'Bash', arguments: '{"command":"npm test -- --run"}', trace_id: 't' },
    { seq: 3, timestamp: at(2), call_id: 'b', tool_name: 'Read', arguments: '{"file_path":"/root/x.ts"}', trace_id: 't' },
    { seq: 4, timestamp: at(2), call_id: 'c', tool_name: 'Task', arguments: 'not json', trace_id: 't' },
  ],
  toolResponses: [
    { seq: 6, timestamp: at(9), call_id: 'a', trace_id: 't' },
    { seq: 7, timestamp: at(1), call_id: 'b', trace_id: 't' },
  ],
  netEvents: [
    {
      seq: 8,
      timestamp: at(0),
      domain: 'api.anthropic.com',
      port: 443,
      path: '/v1/messages',
      status_code: 200,
      duration_ms: 2000,
      decision: 'allowed',
      kind: 'llm',
    },
    { seq: 9, timestamp: at(3), domain: '169.254.169.254', port: 80, path: '/latest', conn_type: 'http', decision: 'denied' },
  ],
};

describe('timeline spans', () => {
  it('makes a turn of every model call, marking failures', () => {
    const t = buildTimeline(input);
    expect(t.turns).toEqual([
      { agent: 'main', start: at(0), end: at(2), seq: 1, finish: 'tool_use', model: 'claude' },
      { agent: 'main', start: at(10), end: at(11), seq: 5, error: true },
    ]);
  });

  it('ends a tool at its first result, clamps a result recorded before the call, and leaves an open one open while live', () => {
    const t = buildTimeline(input);
    expect(t.tools.map((x) => [x.id, x.end, x.preview])).toEqual([
      ['a', at(9), 'npm test -- --run'],
      ['b', at(2), '/root/x.ts'],
      ['c', undefined, 'not json'],
    ]);
  });

  it('ends an unanswered tool where it started, as lost, once the session has ended', () => {
    const t = buildTimeline({ ...input, ended: true });
    expect(t.tools.find((x) => x.id === 'c')).toMatchObject({ end: at(2), lost: true });
  });

  it('classifies hosts and keeps denials as zero-length rows', () => {
    const t = buildTimeline(input);
    expect(t.hosts).toEqual([
      { host: 'api.anthropic.com', kind: 'llm', start: at(0), end: at(2), status: 200, seq: 8 },
      { host: '169.254.169.254', kind: 'http', start: at(3), end: at(3), seq: 9, denied: true },
    ]);
    expect([t.start, t.end]).toEqual([at(0), at(11)]);
  });

  it('previews at most 80 characters', () => {
    expect(toolPreview(JSON.stringify({ command: 'x'.repeat(200) }))).toHaveLength(80);
    expect(toolPreview('{}')).toBeUndefined();
  });

  it('reads only the newest events past the cap and says it truncated', async () => {
    const live = await liveSession(home);
    for (let i = 0; i < 30; i++) void live.recorder.record(anthropicExchange({}, { startedAt: new Date(at(i)) }));
    await live.recorder.settled();
    await live.writer.flush();
    const store = SessionEventStore.open(live.id, sessionPaths(home, live.id).dbPath);
    const capped = readTimeline(store, false, 10);
    const whole = readTimeline(store, false);
    const calls = (store.db.prepare('SELECT seq FROM model_calls ORDER BY seq').all() as { seq: number }[]).map((r) => r.seq);
    store.close();
    await live.end();
    expect(capped.truncated).toBe(true);
    // Ten events are the newest five model calls, each a request and a response; a turn anchors on its request.
    expect(capped.turns.map((x) => x.seq)).toEqual(calls.slice(-5).map(requestSeqOf));
    expect(whole.truncated).toBeUndefined();
    expect(whole.turns).toHaveLength(30);
  });
});
