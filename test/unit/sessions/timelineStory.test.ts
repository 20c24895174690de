import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import {
  agentMessage,
  agentResult,
  asyncAgentResult,
  backgroundAck,
  ClaudeCodeConversation,
  handbackArgs,
  taskNotification,
} from '../../../electron/dev/claudeCodeWire.ts';
import type { SeedToolCall } from '../../../electron/dev/modelWire.ts';
import { SessionEventStore } from '../../../electron/sessions/sessionEventStore.ts';
import { readTimeline, type Timeline } from '../../../electron/sessions/timeline.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { AGENT_USER_AGENT, capturedBody, modelExchange } from '../../helpers/exchanges.ts';
import { at, StoryScene } from '../../helpers/storyScene.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// Every rule of the story (spec: GET /v1/sessions/{id}/timeline), each pinned on Claude Code's
// traffic as it sends it (its headers, its request bodies, Anthropic's streamed answers), recorded
// through the recording pipeline and read back as the API reads it.

const home = tempHome();
afterAll(() => home.remove());

const X = 'a1bf9707ee0e71012';
const Y = 'a0c4de12f8a9b3e57';
const tool = (id: string, name: string, args: object): SeedToolCall => ({ id, name, args: JSON.stringify(args) });
const spawn = (id: string, description: string, type: string, background = false): SeedToolCall =>
  tool(id, 'Agent', { description, prompt: `${description}, then report`, subagent_type: type, run_in_background: background });
const bash = (id: string, command: string, background = false): SeedToolCall =>
  tool(id, 'Bash', { command, ...(background ? { run_in_background: true } : {}) });
/** A side call's conversation: no tools declared, as Claude Code's titler and classifier send. */
const toolLess = (): ClaudeCodeConversation => new ClaudeCodeConversation({}, []);

async function story(script: (scene: StoryScene) => void, ended = false): Promise<Timeline> {
  const scene = await StoryScene.start(home);
  script(scene);
  const timeline = await scene.timeline(ended);
  await scene.end();
  return timeline;
}

const agentsOf = (t: Timeline) => t.agents.map((a) => ({ ...a }));
const turnsOf = (t: Timeline) => t.turns.map((x) => [x.agent, x.start]);
const toolsOf = (t: Timeline) => t.tools.map((x) => [x.id, x.agent, x.start, x.end, x.lost ?? false]);

describe('agents', () => {
  it("are Claude Code's tree from its agent-id headers, each linked to the Agent call whose result names it", async () => {
    const t = await story((scene) => {
      const main = new ClaudeCodeConversation().say('Audit the repo');
      scene.call(main, 0, { tools: [spawn('toolu_s1', 'Survey the code', 'general-purpose')] });
      const x = new ClaudeCodeConversation({ id: X }).say('Survey the code, then report');
      scene.call(x, 2, { tools: [spawn('toolu_s2', 'Read the tests', 'general-purpose')] });
      const y = new ClaudeCodeConversation({ id: Y, parent: X }).say('Read the tests, then report');
      scene.call(y, 4, { text: 'The tests pass.' });
      x.results([{ id: 'toolu_s2', content: agentResult(Y, 'The tests pass.') }]);
      scene.call(x, 6, { text: 'The parser is in src/parse.ts.' });
      main.results([{ id: 'toolu_s1', content: agentResult(X, 'The parser is in src/parse.ts.') }]);
      scene.call(main, 8, {});
    });
    expect(agentsOf(t)).toEqual([
      { id: 'main', label: 'main agent' },
      {
        id: X,
        parent: 'main',
        label: 'Survey the code',
        type: 'general-purpose',
        spawnTool: 'toolu_s1',
        spawnedAt: at(1),
        returnedAt: at(8),
      },
      { id: Y, parent: X, label: 'Read the tests', type: 'general-purpose', spawnTool: 'toolu_s2', spawnedAt: at(3), returnedAt: at(6) },
    ]);
    expect(turnsOf(t)).toEqual([
      ['main', at(0)],
      [X, at(2)],
      [Y, at(4)],
      [X, at(6)],
      ['main', at(8)],
    ]);
    expect(toolsOf(t)).toEqual([
      ['toolu_s1', 'main', at(1), at(8), false],
      ['toolu_s2', X, at(3), at(6), false],
    ]);
  });

  it("take, when their result names none (a foreground Explore agent, a fork), their parent's earliest spawn no agent claimed", async () => {
    const t = await story((scene) => {
      const main = new ClaudeCodeConversation().say('Try both approaches');
      scene.call(main, 0, { tools: [spawn('toolu_f1', 'Find the parser', 'Explore'), spawn('toolu_f2', 'Try approach B', 'fork')] });
      scene.call(new ClaudeCodeConversation({ id: X }).say('Find the parser'), 2, { text: 'In src/parse.ts.' });
      scene.call(main.fork({ id: Y }).say('Try approach B'), 3, { text: 'B fails.' });
      main.results([
        { id: 'toolu_f1', content: 'In src/parse.ts.' },
        { id: 'toolu_f2', content: 'B fails.' },
      ]);
      scene.call(main, 6, {});
    });
    expect(t.agents.map((a) => [a.id, a.parent, a.label, a.type, a.spawnTool])).toEqual([
      ['main', undefined, 'main agent', undefined, undefined],
      [X, 'main', 'Find the parser', 'Explore', 'toolu_f1'],
      [Y, 'main', 'Try approach B', 'fork', 'toolu_f2'],
    ]);
  });

  it('never make a cycle of the parents their headers name: every agent reaches main', async () => {
    const t = await story((scene) => {
      scene.call(new ClaudeCodeConversation({ id: X, parent: Y }).say('one'), 0, {});
      scene.call(new ClaudeCodeConversation({ id: Y, parent: X }).say('two'), 2, {});
    });
    const parentOf = new Map(t.agents.map((a) => [a.id, a.parent]));
    for (const agent of t.agents) {
      let up: string | undefined = agent.id;
      for (let steps = 0; up !== 'main' && steps <= t.agents.length; steps++) up = parentOf.get(up!);
      expect(up, agent.id).toBe('main');
    }
    expect(t.agents.map((a) => a.id).sort()).toEqual(['main', X, Y].sort());
  });

  it('gather the Claude Code requests whose agent id was not kept (recorded before ids were, or unusable) into one subagents agent', async () => {
    const t = await story((scene) => {
      scene.call(new ClaudeCodeConversation().say('Audit'), 0, {});
      // The header is recorded hashed, as every header off the allowlist; its value, holding a control character, is refused.
      scene.call(new ClaudeCodeConversation({ id: 'a1\u0007' }).say('Survey'), 2, {});
      scene.call(new ClaudeCodeConversation({ id: `a${'0'.repeat(200)}` }).say('Read'), 4, {});
    });
    expect(t.agents).toEqual([
      { id: 'main', label: 'main agent' },
      { id: 'subagents', parent: 'main', label: 'subagents' },
    ]);
    expect(turnsOf(t)).toEqual([
      ['main', at(0)],
      ['subagents', at(2)],
      ['subagents', at(4)],
    ]);
  });
});

describe('turns', () => {
  it("leave out progress labels, away recaps and Claude Code's tool-less side calls; another client's tool-less calls are kept", async () => {
    const t = await story((scene) => {
      const main = new ClaudeCodeConversation().say('Fix the bug');
      scene.call(main, 0, { text: 'Fixed.' });
      const label = new ClaudeCodeConversation().say(
        'Describe your most recent action in 3-5 words using present tense (-ing). Name the file or function, not the branch. Do not use tools.',
      );
      scene.call(label, 2, { text: 'Fixing parse.ts' });
      const recap = new ClaudeCodeConversation().say(
        'The user stepped away and is coming back. Recap in under 40 words, 1-2 plain sentences, no markdown. Lead with the overall goal and current task, then the one next action. Skip root-cause narrative, fix internals, secondary to-dos, and em-dash tangents.',
      );
      scene.call(recap, 4, { text: 'Fixing the bug.' });
      scene.call(toolLess().say('<session>\nFix the bug\n</session>\n'), 6, { text: '{"title":"Fix the bug"}' });
      const request = { model: 'gpt-4o', messages: [{ role: 'user', content: 'title this' }] };
      const response = { id: 'c1', model: 'gpt-4o', choices: [{ message: { content: 'x' }, finish_reason: 'stop' }], usage: {} };
      void scene.live.recorder.record(
        modelExchange(
          'api.openai.com',
          '/v1/chat/completions',
          Buffer.from(JSON.stringify(request)),
          Buffer.from(JSON.stringify(response)),
          {
            startedAt: new Date(at(8)),
          },
        ),
      );
    });
    expect(t.turns.map((x) => [x.agent, x.start, x.model])).toEqual([
      ['main', at(0), 'claude-sonnet-4-5-20250929'],
      ['main', at(8), 'gpt-4o'],
    ]);
    // Each is still a host row.
    expect(t.hosts.map((h) => h.kind)).toEqual(['llm', 'llm', 'llm', 'llm', 'llm']);
  });

  it('mark an error: an upstream error, a refusal, a stream cut before its finish, the client giving up', async () => {
    const t = await story((scene) => {
      const overloaded = new ClaudeCodeConversation().say('one');
      scene.call(
        overloaded,
        0,
        { joins: false },
        { status: 529, responseBody: capturedBody('{"type":"error","error":{"type":"overloaded_error"}}') },
      );
      scene.call(new ClaudeCodeConversation().say('two'), 2, { stop: 'refusal' });
      const cut = new ClaudeCodeConversation().say('three').call({ text: 'Half an answ' });
      const response = cut.response.toString();
      const beforeFinish = Buffer.from(response.slice(0, response.indexOf('event: message_delta')));
      void scene.live.recorder.record(
        modelExchange(cut.host, cut.path, cut.request, beforeFinish, {
          startedAt: new Date(at(4)),
          requestHeaders: cut.requestHeaders,
          responseHeaders: cut.responseHeaders,
          error: { kind: 'upstream_error', message: 'api.anthropic.com:443 closed the stream' },
        }),
      );
      scene.call(
        new ClaudeCodeConversation().say('four'),
        6,
        {},
        { error: { kind: 'client_canceled', message: 'the client closed the connection' } },
      );
      scene.call(new ClaudeCodeConversation().say('five'), 8, {});
    });
    expect(t.turns.map((x) => [x.start, x.finish, x.error ?? false])).toEqual([
      [at(0), undefined, true],
      [at(2), 'refusal', true],
      [at(4), undefined, true],
      [at(6), 'end_turn', true],
      [at(8), 'end_turn', false],
    ]);
  });

  it("mark resent a call that sent its agent's previous conversation again unchanged: a retry", async () => {
    const t = await story((scene) => {
      const main = new ClaudeCodeConversation().say('Fix it');
      scene.call(main, 0, { joins: false }, { status: 529 });
      scene.call(main, 3, {});
      scene.call(new ClaudeCodeConversation({ id: X }).say('Fix it'), 5, {});
      main.say('Thanks');
      scene.call(main, 7, {});
    });
    expect(t.turns.map((x) => [x.agent, x.start, x.resent ?? false, x.error ?? false])).toEqual([
      ['main', at(0), false, true],
      ['main', at(3), true, false],
      [X, at(5), false, false],
      ['main', at(7), false, false],
    ]);
  });
});

describe('tools', () => {
  it('end at the first request of their own agent carrying the result, not a fork that carried it first', async () => {
    const t = await story((scene) => {
      const main = new ClaudeCodeConversation().say('Test it');
      scene.call(main, 0, { tools: [bash('toolu_b', 'npm test')] });
      main.results([{ id: 'toolu_b', content: '3 passing' }]);
      const fork = main.fork({ id: X }).say('Try approach A');
      scene.call(fork, 2, {});
      scene.call(main, 5, {});
    });
    expect(toolsOf(t)).toEqual([['toolu_b', 'main', at(1), at(5), false]]);
  });

  it('end at a failed dial to a model host between their start and result, unless their agent or one below it then made a good turn', async () => {
    const cutOff = await story((scene) => {
      const main = new ClaudeCodeConversation().say('Test it');
      scene.call(main, 0, { tools: [bash('toolu_d', 'npm test')] });
      scene.failedDial(toolLess().say('title'), 5);
      main.results([{ id: 'toolu_d', content: 'ok' }]);
      scene.call(main, 20, {});
    });
    expect(toolsOf(cutOff)).toEqual([['toolu_d', 'main', at(1), at(5), false]]);
    const blip = await story((scene) => {
      const main = new ClaudeCodeConversation().say('Test it');
      scene.call(main, 0, { tools: [bash('toolu_d', 'npm test')] });
      scene.failedDial(toolLess().say('title'), 5);
      scene.call(new ClaudeCodeConversation({ id: X }).say('Look'), 8, {});
      main.results([{ id: 'toolu_d', content: 'ok' }]);
      scene.call(main, 20, {});
    });
    expect(toolsOf(blip)).toEqual([['toolu_d', 'main', at(1), at(20), false]]);
  });

  it('are lost, ending where they started, when their agent moved on, handed back, or was named ended by a task notification', async () => {
    const t = await story((scene) => {
      const main = new ClaudeCodeConversation().say('Go');
      scene.call(main, 0, {
        tools: [
          bash('toolu_m', 'make'),
          spawn('toolu_a', 'Survey', 'general-purpose', true),
          spawn('toolu_b', 'Build', 'general-purpose', true),
        ],
      });
      main.results([
        { id: 'toolu_a', content: asyncAgentResult(X) },
        { id: 'toolu_b', content: asyncAgentResult(Y) },
      ]);
      scene.call(main, 2, {});
      scene.call(new ClaudeCodeConversation({ id: X }).say('Survey, then report'), 3, {
        tools: [tool('toolu_h', 'SubagentHandback', JSON.parse(handbackArgs('Done.')) as object)],
      });
      scene.call(new ClaudeCodeConversation({ id: Y }).say('Build, then report'), 4, { tools: [bash('toolu_y', 'make -j8')] });
      // A failed dial after they stopped ends nothing: they already ended where they started.
      scene.failedDial(toolLess().say('title'), 8);
      main.say(taskNotification({ taskId: Y, toolUseId: 'toolu_b', summary: 'Agent "Build" was stopped by user', status: 'killed' }));
      scene.call(main, 9, {});
    });
    expect(toolsOf(t)).toEqual([
      ['toolu_m', 'main', at(1), at(1), true],
      ['toolu_a', 'main', at(1), at(2), false],
      ['toolu_b', 'main', at(1), at(2), false],
      ['toolu_h', X, at(4), at(4), true],
      ['toolu_y', Y, at(5), at(5), true],
    ]);
  });
});

describe('jobs', () => {
  it('run from the acknowledgement of a background command to the first notification that it ended; its tool ends at the acknowledgement', async () => {
    const t = await story((scene) => {
      const main = new ClaudeCodeConversation().say('Serve it');
      scene.call(main, 0, { tools: [bash('toolu_j', 'npm run serve', true), bash('toolu_k', 'npm run watch', true)] });
      main.results([
        { id: 'toolu_j', content: backgroundAck('b3k9x0q2z') },
        { id: 'toolu_k', content: backgroundAck('bw7tq0a1c') },
      ]);
      scene.call(main, 2, { tools: [bash('toolu_w', 'sleep 2')] });
      // While a tool round is in flight, Claude Code appends what it has to say to the next tool result:
      // here a check-in, which names the job but ends nothing, then the notification that it ended.
      const checkIn =
        '<system-reminder>\n<task-notification>\n<task-id>b3k9x0q2z</task-id>\n<tool-use-id>toolu_j</tool-use-id>\n<summary>Background command "serve" is still running after 10m</summary>\n</task-notification>\nThis is a check-in, not a completion.\n</system-reminder>';
      main.results([{ id: 'toolu_w', content: `(Bash completed with no output)\n\n${checkIn}` }]);
      scene.call(main, 20, { tools: [bash('toolu_v', 'sleep 5')] });
      const ended = taskNotification({
        taskId: 'b3k9x0q2z',
        toolUseId: 'toolu_j',
        summary: 'Background command "serve" completed (exit code 0)',
      });
      main.results([{ id: 'toolu_v', content: `(Bash completed with no output)\n\n${ended}` }]);
      scene.call(main, 30, {});
      scene.call(main.say('More?'), 40, {});
    });
    expect(t.jobs).toEqual([
      { agent: 'main', id: 'b3k9x0q2z', start: at(2), end: at(30), seq: expect.any(Number) },
      { agent: 'main', id: 'bw7tq0a1c', start: at(2), seq: expect.any(Number) },
    ]);
    expect(toolsOf(t)).toEqual([
      ['toolu_j', 'main', at(1), at(2), false],
      ['toolu_k', 'main', at(1), at(2), false],
      ['toolu_w', 'main', at(3), at(20), false],
      ['toolu_v', 'main', at(21), at(30), false],
    ]);
  });

  it("of an agent cut off end at the first failed dial to a model host after that agent's last call", async () => {
    const t = await story((scene) => {
      const x = new ClaudeCodeConversation({ id: X }).say('Serve');
      scene.call(x, 0, { tools: [bash('toolu_j', 'npm run serve', true)] });
      x.results([{ id: 'toolu_j', content: backgroundAck('b3k9x0q2z') }]);
      scene.call(x, 2, {});
      scene.failedDial(new ClaudeCodeConversation().say('Next'), 9);
    });
    expect(t.jobs).toEqual([{ agent: X, id: 'b3k9x0q2z', start: at(2), end: at(9), seq: expect.any(Number) }]);
  });
});

describe('returns', () => {
  it("are a subagent's result reaching another agent, once, where its message first reaches it", async () => {
    const t = await story((scene) => {
      const main = new ClaudeCodeConversation().say('Survey in the background');
      scene.call(main, 0, { tools: [spawn('toolu_a', 'Survey the code', 'Explore', true)] });
      main.results([{ id: 'toolu_a', content: asyncAgentResult(X) }]);
      scene.call(main, 2, {});
      const x = new ClaudeCodeConversation({ id: X }).say('Survey the code, then report');
      scene.call(x, 3, { tools: [tool('toolu_h', 'SubagentHandback', JSON.parse(handbackArgs('All callers found.')) as object)] });
      main.say(agentMessage(X, 'All callers found.'));
      scene.call(main, 10, {});
      // The conversation re-sent with the message in its history brings nothing back again.
      scene.call(main.say('Thanks'), 12, {});
    });
    expect(t.returns).toEqual([{ agent: X, into: 'main', at: at(10), seq: expect.any(Number) }]);
    expect(t.agents.find((a) => a.id === X)).toMatchObject({ spawnTool: 'toolu_a', spawnedAt: at(1), returnedAt: at(10), type: 'Explore' });
  });
  it('are counted once when Claude Code re-sends a notification merged with the next one into one user message', async () => {
    const t = await story((scene) => {
      const main = new ClaudeCodeConversation().say('Survey in the background');
      scene.call(main, 0, { tools: [spawn('toolu_a', 'Survey the code', 'general-purpose', true)] });
      main.results([{ id: 'toolu_a', content: asyncAgentResult(X) }]);
      scene.call(main, 2, {});
      const x = new ClaudeCodeConversation({ id: X }).say('Survey the code, then report');
      scene.call(x, 3, {});
      main.say(taskNotification({ taskId: X, toolUseId: 'toolu_a', summary: 'Agent "Survey the code" completed' }));
      // Its answer is not kept in the history Claude Code re-sends, so the next notification
      // follows the first and is merged with it into one user message: the text around the first
      // one changes.
      scene.call(main, 10, { joins: false });
      main.say(
        taskNotification({ taskId: 'b3k9x0q2z', toolUseId: 'toolu_j', summary: 'Background command "build" completed (exit code 0)' }),
      );
      main.mergeUserTurns();
      scene.call(main, 14, {});
    });
    expect(t.returns).toEqual([{ agent: X, into: 'main', at: at(10), seq: expect.any(Number) }]);
  });
});

describe('clients', () => {
  it('give another known client one main row with its turns and tools, whatever headers it sends, and an unknown client host rows only', async () => {
    const t = await story((scene) => {
      const opencode = new ClaudeCodeConversation({ id: X }).say('Fix');
      const call = opencode.call({ tools: [bash('toolu_o', 'ls')] });
      void scene.live.recorder.record(
        modelExchange(call.host, call.path, call.request, call.response, {
          startedAt: new Date(at(0)),
          requestHeaders: { ...call.requestHeaders, 'user-agent': AGENT_USER_AGENT },
          responseHeaders: call.responseHeaders,
        }),
      );
      const curl = new ClaudeCodeConversation().say('Fix').call({ tools: [bash('toolu_u', 'ls')] });
      void scene.live.recorder.record(
        modelExchange(curl.host, curl.path, curl.request, curl.response, {
          startedAt: new Date(at(2)),
          requestHeaders: { ...curl.requestHeaders, 'user-agent': 'curl/8.5.0' },
          responseHeaders: curl.responseHeaders,
        }),
      );
    });
    expect(t.agents).toEqual([{ id: 'main', label: 'main agent' }]);
    expect(turnsOf(t)).toEqual([['main', at(0)]]);
    expect(t.tools.map((x) => [x.id, x.agent])).toEqual([['toolu_o', 'main']]);
    expect(t.hosts.map((h) => [h.host, h.kind])).toEqual([
      ['api.anthropic.com', 'llm'],
      ['api.anthropic.com', 'llm'],
    ]);
  });
});

describe('a session recorded before the story was (session.db version 6)', () => {
  it('reads as it was recorded: its subagents as one agent, its tools ended by their first result, its events without agent ids', async () => {
    const scene = await StoryScene.start(home);
    const main = new ClaudeCodeConversation().say('Audit the repo');
    scene.call(main, 0, { tools: [spawn('toolu_s1', 'Survey the code', 'general-purpose')] });
    scene.call(new ClaudeCodeConversation({ id: X }).say('Survey the code, then report'), 2, { text: 'Found it.' });
    main.results([{ id: 'toolu_s1', content: agentResult(X, 'Found it.') }]);
    scene.call(main, 5, {});
    await scene.timeline();
    await scene.end();
    // The file as a Capsem before the agent-story step wrote it: no agent columns, no story marks.
    const copy = `${home.root}/before-story.db`;
    const source = new Database(sessionPaths(home, scene.live.id).dbPath);
    source.prepare('VACUUM INTO ?').run(copy);
    source.close();
    const older = new Database(copy);
    for (const column of ['agent_id', 'parent_agent_id', 'side_call', 'conversation_hash'])
      older.exec(`ALTER TABLE net_events DROP COLUMN ${column}`);
    older.exec('DROP TABLE story_marks');
    older.pragma('user_version = 6');
    older.close();
    const store = SessionEventStore.open(scene.live.id, copy);
    const t = readTimeline(store, true);
    const events = store.page(undefined, 100).map((ref) => store.event(ref, { full: true }));
    store.close();
    expect(t.agents).toEqual([
      { id: 'main', label: 'main agent' },
      { id: 'subagents', parent: 'main', label: 'subagents' },
    ]);
    expect(turnsOf(t)).toEqual([
      ['main', at(0)],
      ['subagents', at(2)],
      ['main', at(5)],
    ]);
    expect(toolsOf(t)).toEqual([['toolu_s1', 'main', at(1), at(5), false]]);
    expect(events.filter((e) => e.subagent !== undefined || e.parentSubagent !== undefined)).toEqual([]);
  });
});
