import { afterAll, describe, expect, it } from 'vitest';
import { ClaudeCodeConversation } from '../../../electron/dev/claudeCodeWire.ts';
import { requestSeqOf } from '../../../electron/sessions/eventSeq.ts';
import { SessionEventStore } from '../../../electron/sessions/sessionEventStore.ts';
import { readTimeline, toolPreview } from '../../../electron/sessions/timeline.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { anthropicExchange, deniedBy } from '../../helpers/exchanges.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { at, StoryScene } from '../../helpers/storyScene.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());

const bash = (id: string, command: string) => ({ id, name: 'Bash', args: JSON.stringify({ command }) });

describe('timeline spans', () => {
  it('makes a turn of every model call, labelled by its model, marking failures', async () => {
    const scene = await StoryScene.start(home);
    const main = new ClaudeCodeConversation().say('Fix the failing test');
    scene.call(main, 0, { tools: [bash('toolu_a', 'npm test')] }, { durationMs: 2000 });
    main.results([{ id: 'toolu_a', content: '1 failing' }]);
    scene.call(
      main,
      10,
      { joins: false },
      { status: 529, responseBody: { bytes: Buffer.from('{"type":"error"}'), total: 16, truncated: false } },
    );
    const t = await scene.timeline();
    await scene.end();
    expect(t.turns.map(({ agent, start, end, finish, model, error }) => ({ agent, start, end, finish, model, error }))).toEqual([
      { agent: 'main', start: at(0), end: at(2), finish: 'tool_use', model: 'claude-sonnet-4-5-20250929', error: undefined },
      { agent: 'main', start: at(10), end: at(11), finish: undefined, model: 'claude-sonnet-4-5-20250929', error: true },
    ]);
  });

  it('runs a tool from the response that asked for it to the request carrying its result, clamped, and leaves an open one open while live', async () => {
    const scene = await StoryScene.start(home);
    const main = new ClaudeCodeConversation().say('Look around');
    scene.call(main, 0, { tools: [bash('toolu_a', 'npm test -- --run'), bash('toolu_b', 'ls')] }, { durationMs: 2000 });
    // Claude Code started `ls` while the answer streamed: the request carrying its result began before that answer had ended.
    main.results([{ id: 'toolu_b', content: 'src' }]);
    scene.call(main, 1, { text: 'Still testing.' }, { durationMs: 500 });
    main.results([{ id: 'toolu_a', content: 'ok' }]);
    scene.call(main, 9, { tools: [bash('toolu_c', 'sleep 1000')] });
    const t = await scene.timeline();
    await scene.end();
    expect(t.tools.map((x) => [x.id, x.start, x.end, x.preview])).toEqual([
      ['toolu_a', at(2), at(9), 'npm test -- --run'],
      ['toolu_b', at(2), at(2), 'ls'],
      ['toolu_c', at(10), undefined, 'sleep 1000'],
    ]);
  });

  it('ends an unanswered tool where it started, as lost, once the session has ended', async () => {
    const scene = await StoryScene.start(home);
    const main = new ClaudeCodeConversation().say('Wait');
    scene.call(main, 0, { tools: [bash('toolu_w', 'sleep 9')] });
    const t = await scene.timeline(true);
    await scene.end();
    expect(t.tools).toEqual([expect.objectContaining({ id: 'toolu_w', start: at(1), end: at(1), lost: true })]);
  });

  it("makes a host row of every exchange, of its recorded kind, h:443 sharing h's row, and keeps denials as zero-length rows", async () => {
    const scene = await StoryScene.start(home);
    scene.call(new ClaudeCodeConversation().say('hi'), 0, {}, { durationMs: 2000 });
    scene.exchange('169.254.169.254', '/latest', 3, { port: 80, scheme: 'http', ...deniedBy('default.deny-link-local'), durationMs: 0 });
    scene.exchange('github.com', '/x', 4, { port: 443 });
    scene.exchange('github.com', '/y', 5, { port: 8443 });
    // Given up on before any answer: the row is written once the exchange has ended, so it ends where it started.
    scene.exchange('pypi.org', '/simple/', 6, {
      status: null,
      responseHeaders: null,
      durationMs: 4000,
      error: { kind: 'client_canceled', message: 'gone' },
    });
    const t = await scene.timeline();
    await scene.end();
    expect(t.hosts.map(({ host, kind, start, end, status, denied }) => ({ host, kind, start, end, status, denied }))).toEqual([
      { host: 'api.anthropic.com', kind: 'llm', start: at(0), end: at(2), status: 200, denied: undefined },
      { host: '169.254.169.254', kind: 'http', start: at(3), end: at(3), status: 403, denied: true },
      { host: 'github.com', kind: 'http', start: at(4), end: at(4.001), status: 200, denied: undefined },
      { host: 'github.com:8443', kind: 'http', start: at(5), end: at(5.001), status: 200, denied: undefined },
      { host: 'pypi.org', kind: 'http', start: at(6), end: at(6), status: undefined, denied: undefined },
    ]);
    expect([t.start, t.end]).toEqual([at(0), at(6)]);
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
