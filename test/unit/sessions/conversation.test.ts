import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConversationTurn } from '../../../electron/contract/appContract.ts';
import type { SessionId } from '../../../electron/contract/ids.ts';
import { agentResult, ClaudeCodeConversation } from '../../../electron/dev/claudeCodeWire.ts';
import { modelAnswerWire } from '../../../electron/dev/modelWire.ts';
import { Conversations, HEAD_CHARS } from '../../../electron/sessions/conversation.ts';
import { EventDetails } from '../../../electron/sessions/eventDetail.ts';
import { SessionStores, type OpenSession } from '../../../electron/sessions/sessionStores.ts';
import { readTimeline } from '../../../electron/sessions/timeline.ts';
import { AnthropicStory } from '../../helpers/agentStory.ts';
import { modelExchange } from '../../helpers/exchanges.ts';
import { liveSession, recordFileChange } from '../../helpers/sessionFixture.ts';
import { at, StoryScene } from '../../helpers/storyScene.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The Conversation read model over sessions recorded through the pipeline: what each turn was told
// and said, its tools paired with their results, its errors, the files changed until its agent's
// next turn, its figures, its retries, pages of it, the turn an event falls in, and Claude Code's
// subagents nested under the call that spawned them (as the timeline's agent rules tell them).

const home = tempHome();
const stores = new SessionStores(home);
afterAll(() => {
  stores.close();
  home.remove();
});

const FIRST_PROMPT = 'Fix the failing test in src/retry.ts';
const LONG_READ = Array.from({ length: 250 }, (_, i) => `line ${String(i).padStart(3, '0')} of retry.test.ts`).join('\n');
const read = { id: 'toolu_read', name: 'Read', args: JSON.stringify({ file_path: 'src/retry.test.ts' }) };
const bash = { id: 'toolu_bash', name: 'Bash', args: JSON.stringify({ command: 'npm test' }) };
const edit = { id: 'toolu_edit', name: 'Edit', args: JSON.stringify({ file_path: 'src/retry.ts', old_string: '5', new_string: '3' }) };

let story: SessionId;
let turns: ConversationTurn[];
let session: OpenSession;

/** The story: a prompt, tools read and run (one fails), an edit, a call the API refused and its retry, then a second prompt. */
beforeAll(async () => {
  const live = await liveSession(home, 'story');
  const agent = new AnthropicStory(live);
  agent.file('before-any-turn.txt');
  await agent.call({
    prompt: FIRST_PROMPT,
    thinking: 'Read the test first.',
    text: 'I will **read** the test and run it.',
    tools: [read, bash],
    usage: { input: 1200, output: 80, cacheRead: 300, cacheWrite: 40 },
    durationMs: 2500,
  });
  await agent.call({
    results: [
      { callId: read.id, content: LONG_READ },
      { callId: bash.id, content: 'FAIL src/retry.test.ts: expected 3 attempts, got 5', isError: true },
    ],
    text: 'The retry budget is 5; the test wants 3.',
    tools: [edit],
    files: ['src/retry.ts'],
  });
  await agent.call({ results: [{ callId: edit.id, content: 'edited src/retry.ts' }], status: 529 });
  await agent.call({ text: 'Fixed: the budget is 3 now.', files: ['notes.md', 'src/retry.test.ts'] });
  await agent.call({ prompt: 'Now run the linter', text: 'Lint is clean.' });
  await live.end();
  story = live.id;
  session = stores.get(story);
  const page = new Conversations().page(session, true, 0, 50);
  expect(page.total).toBe(5);
  turns = page.turns;
});

describe('a recorded agent session, turn by turn', () => {
  it('shows the user text a turn sent that its agent had not sent before, and nothing for turns that only carried results or retried', () => {
    expect(turns.map((t) => t.prompt?.head ?? null)).toEqual([FIRST_PROMPT, null, null, null, 'Now run the linter']);
    expect(turns[0]!.prompt).toMatchObject({ complete: true, total: FIRST_PROMPT.length });
  });

  it("gives the model's thinking and its markdown answer, each from its own call", () => {
    expect(turns[0]!.thinking?.head).toBe('Read the test first.');
    expect(turns[0]!.text?.head).toBe('I will **read** the test and run it.');
    expect(turns.map((t) => t.text?.head ?? null)).toEqual([
      'I will **read** the test and run it.',
      'The retry budget is 5; the test wants 3.',
      null,
      'Fixed: the budget is 3 now.',
      'Lint is clean.',
    ]);
    expect(turns[1]!.thinking).toBeNull();
  });

  it('pairs each tool call with the result sent back for it, in the turn that asked for it, with the call that carried the result', () => {
    expect(turns[0]!.tools.map((t) => [t.name, t.status, JSON.parse(t.arguments!.head) as unknown, t.result?.isError])).toEqual([
      ['Read', 'responded', { file_path: 'src/retry.test.ts' }, false],
      ['Bash', 'error', { command: 'npm test' }, true],
    ]);
    expect(turns[0]!.tools[1]!.result!.text!.head).toBe('FAIL src/retry.test.ts: expected 3 attempts, got 5');
    // Both results went back in the second call; the edit's in the third (which the API refused).
    expect(turns[0]!.tools.map((t) => t.result!.link)).toEqual([turns[1]!.link, turns[1]!.link]);
    expect(turns[1]!.tools.map((t) => [t.name, t.result?.link])).toEqual([['Edit', turns[2]!.link]]);
    expect(turns[2]!.tools).toEqual([]);
    expect(turns[0]!.tools.map((t) => t.link.kind)).toEqual(['tool', 'tool']);
  });

  it('cuts a long result to its head and gives the rest on asking', () => {
    const result = turns[0]!.tools[0]!.result!.text!;
    expect(result).toMatchObject({ complete: false, total: LONG_READ.length });
    expect(result.head).toBe(LONG_READ.slice(0, HEAD_CHARS));
    const whole = new Conversations().text(session, result.source, result.rowId, 0, 1 << 20);
    expect(whole).toEqual({ text: LONG_READ, offset: 0, total: LONG_READ.length });
    const rest = new Conversations().text(session, result.source, result.rowId, HEAD_CHARS, 100);
    expect(rest.text).toBe(LONG_READ.slice(HEAD_CHARS, HEAD_CHARS + 100));
    expect(() => new Conversations().text(session, 'item', 999_999, 0, 10)).toThrow(/no item text/);
  });

  it('marks the call the API refused as an error, with its status', () => {
    expect(turns.map((t) => [t.error, t.status])).toEqual([
      [false, 200],
      [false, 200],
      [true, 529],
      [false, 200],
      [false, 200],
    ]);
  });

  it("marks the call that re-sent its agent's previous conversation unchanged as a retry", () => {
    expect(turns.map((t) => t.retry)).toEqual([false, false, false, true, false]);
  });

  it("lists the files changed from each turn until its agent's next turn, by time", () => {
    expect(turns.map((t) => t.files.map((f) => f.path))).toEqual([[], ['src/retry.ts'], [], ['notes.md', 'src/retry.test.ts'], []]);
    expect(turns.map((t) => t.fileCount)).toEqual([0, 1, 0, 2, 0]);
    expect(turns[1]!.files[0]).toMatchObject({ action: 'modified', size: 100, entries: null, link: { kind: 'file' } });
  });

  it("gives each turn's tokens, cost and time, and links it to its model call and the exchange that carried it", async () => {
    expect(turns[0]).toMatchObject({
      inputTokens: 1200,
      outputTokens: 80,
      cacheReadTokens: 300,
      cacheWriteTokens: 40,
      durationMs: 2500,
      provider: 'anthropic',
      model: 'claude-sonnet-4-20250514',
      finish: 'tool_use',
      at: '2026-03-01T10:00:00.001Z',
      agent: 'main',
      depth: 0,
      under: null,
    });
    expect(turns[0]!.costUsd).toBeGreaterThan(0);
    expect(turns[2]!.costUsd).toBe(0);
    const details = new EventDetails();
    for (const t of turns) {
      const model = await details.detail(session, 'model', t.link.seq);
      expect(model.fields.timestamp).toBe(t.at);
      expect(model.netSeq).toBe(t.netLink!.seq);
      const net = await details.detail(session, 'net', t.netLink!.seq);
      expect(net.fields.path).toBe('/v1/messages');
    }
    // The turn's seq is the timeline's for the same call.
    expect(readTimeline(session.store, true).turns.map((t) => t.seq)).toEqual(turns.map((t) => t.seq));
  });

  it('gives any range of turns as the whole list has them', () => {
    const conversations = new Conversations();
    const middle = conversations.page(session, true, 1, 2);
    expect(middle.total).toBe(5);
    expect(middle.turns).toEqual(turns.slice(1, 3));
    expect(conversations.page(session, true, 4, 10).turns).toEqual(turns.slice(4));
    expect(conversations.page(session, true, 5, 10).turns).toEqual([]);
  });

  it('finds the turn holding an event: a model call, a tool call, a timeline seq, a file changed during a turn', () => {
    const conversations = new Conversations();
    expect(turns.map((t) => conversations.find(session, true, t.link.seq, 'model'))).toEqual([0, 1, 2, 3, 4]);
    expect(turns.map((t) => conversations.find(session, true, t.seq, null))).toEqual([0, 1, 2, 3, 4]);
    expect(conversations.find(session, true, turns[1]!.tools[0]!.link.seq, 'tool')).toBe(1);
    // The exchange that carried the fourth call, by its own (wire) seq.
    expect(conversations.find(session, true, 2 * turns[3]!.netLink!.seq - 1, null)).toBe(3);
    expect(conversations.find(session, true, 2 * turns[3]!.files[1]!.link.seq, null)).toBe(3);
    expect(conversations.find(session, true, 1, null)).toBeNull();
    expect(conversations.find(session, true, 999_999, 'model')).toBeNull();
  });
});

describe('a live session', () => {
  it('grows as the agent makes calls, and a turn gets its tool results once they are sent back', async () => {
    const live = await liveSession(home);
    const agent = new AnthropicStory(live);
    await agent.call({ prompt: 'List the files', text: 'Listing.', tools: [bash] });
    await live.writer.flush();
    const open = stores.get(live.id);
    const conversations = new Conversations();
    const first = conversations.page(open, false, 0, 10);
    expect(first.total).toBe(1);
    expect(first.turns[0]!.tools[0]!.result).toBeNull();
    await agent.call({ results: [{ callId: bash.id, content: 'a.txt b.txt' }], text: 'Two files.' });
    await live.writer.flush();
    const second = conversations.page(open, false, 0, 10);
    expect(second.total).toBe(2);
    expect(second.turns[0]!.tools[0]!.result!.text!.head).toBe('a.txt b.txt');
    await live.end();
  });
});

describe('which model calls are turns', () => {
  it("tells the calls of a client the timeline does not know as the main agent's, and leaves out the side calls it leaves out", async () => {
    const scene = await StoryScene.start(home);
    scene.call(new ClaudeCodeConversation().say('Fix the build'), 0, { text: 'Fixing.' });
    // Claude Code's titler: no tools declared, a one-shot.
    scene.call(new ClaudeCodeConversation({}, []).say('Write a 5-word title for: Fix the build'), 1, { text: 'Fixing the build' });
    // A script of the user's own, with no User-Agent the timeline knows.
    const answer = modelAnswerWire('anthropic', {
      model: 'claude-sonnet-4-20250514',
      messageId: 'msg_script',
      text: 'It failed twice.',
      thinking: null,
      tools: [],
      stop: 'end_turn',
      usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0 },
    });
    const request = { model: 'claude-sonnet-4-20250514', max_tokens: 100, messages: [{ role: 'user', content: 'Summarise the log' }] };
    void scene.live.recorder.record(
      modelExchange('api.anthropic.com', '/v1/messages', Buffer.from(JSON.stringify(request)), Buffer.from(answer.body), {
        startedAt: new Date(at(3)),
        requestHeaders: { host: 'api.anthropic.com', 'content-type': 'application/json', 'user-agent': 'python-httpx/0.28.1' },
        responseHeaders: { 'content-type': answer.contentType },
      }),
    );
    await scene.timeline(true);
    await scene.end();
    const page = new Conversations().page(stores.get(scene.live.id), true, 0, 10);
    expect(page.turns.map((t) => [t.agent, t.prompt?.head, t.text?.head, t.at])).toEqual([
      ['main', 'Fix the build', 'Fixing.', at(0)],
      ['main', 'Summarise the log', 'It failed twice.', at(3)],
    ]);
  });
});

describe('subagents', () => {
  it("nests a Claude Code subagent's turns under the Agent call that spawned it, a level per generation, before its parent's next turn", async () => {
    const X = 'a1bf9707ee0e71012';
    const Y = 'a0c4de12f8a9b3e57';
    const spawn = (id: string, description: string) => ({
      id,
      name: 'Agent',
      args: JSON.stringify({ description, prompt: `${description}, then report`, subagent_type: 'general-purpose' }),
    });
    const scene = await StoryScene.start(home);
    const main = new ClaudeCodeConversation().say('Audit the repo');
    scene.call(main, 0, { text: 'Sending a surveyor.', tools: [spawn('toolu_s1', 'Survey the code')] });
    const x = new ClaudeCodeConversation({ id: X }).say('Survey the code, then report');
    scene.call(x, 2, { tools: [spawn('toolu_s2', 'Read the tests')] });
    const y = new ClaudeCodeConversation({ id: Y, parent: X }).say('Read the tests, then report');
    scene.call(y, 4, { text: 'The tests pass.' });
    recordFileChange(scene.live, 'notes/tests.md', { ts_ms: Date.parse(at(5)) });
    x.results([{ id: 'toolu_s2', content: agentResult(Y, 'The tests pass.') }]);
    scene.call(x, 6, { text: 'The parser is in src/parse.ts.' });
    main.results([{ id: 'toolu_s1', content: agentResult(X, 'The parser is in src/parse.ts.') }]);
    scene.call(main, 8, { text: 'Found it.' });
    await scene.timeline(true);
    await scene.end();
    const page = new Conversations().page(stores.get(scene.live.id), true, 0, 10);
    expect(page.turns.map((t) => [t.agent, t.depth, t.under, t.prompt?.head ?? null, t.at])).toEqual([
      ['main', 0, null, 'Audit the repo', at(0)],
      [X, 1, 'toolu_s1', 'Survey the code, then report', at(2)],
      [Y, 2, 'toolu_s2', 'Read the tests, then report', at(4)],
      [X, 1, 'toolu_s1', null, at(6)],
      ['main', 0, null, null, at(8)],
    ]);
    expect(page.turns[0]!.tools.map((t) => [t.name, t.spawned, t.result?.text?.head.split('\n')[0]])).toEqual([
      ['Agent', X, 'The parser is in src/parse.ts.'],
    ]);
    expect(page.turns[1]!.tools.map((t) => [t.name, t.spawned])).toEqual([['Agent', Y]]);
    expect(page.agents.map((a) => [a.id, a.label])).toEqual([
      ['main', 'main agent'],
      [X, 'Survey the code'],
      [Y, 'Read the tests'],
    ]);
    // A file changed while Y worked is Y's turn's, and X's and main's too: each lasts until its agent's next turn.
    expect(page.turns.map((t) => t.files.map((f) => f.path))).toEqual([['notes/tests.md'], ['notes/tests.md'], ['notes/tests.md'], [], []]);
  });
});
