import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConversationTurn } from '../../../electron/contract/appContract.ts';
import type { SessionId } from '../../../electron/contract/ids.ts';
import { Conversations, HEAD_CHARS, type TimelineReader } from '../../../electron/sessions/conversation.ts';
import { EventDetails } from '../../../electron/sessions/eventDetail.ts';
import { SessionStores, type OpenSession } from '../../../electron/sessions/sessionStores.ts';
import { readTimeline } from '../../../electron/sessions/timeline.ts';
import { AnthropicStory } from '../../helpers/agentStory.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { tempHome } from '../../helpers/tempHome.ts';

// The Conversation read model over sessions recorded through the pipeline: what each turn was told
// and said, its tools paired with their results, its errors, the files changed until its agent's
// next turn, its figures, pages of it, the turn an event falls in, and subagents nested under the
// call that spawned them (on the timeline the agent rules give).

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

  it("marks a retry when the timeline's rules say the call re-sent its agent's previous one", () => {
    const resentFourth: TimelineReader = (store, ended) => {
      const t = readTimeline(store, ended);
      return { ...t, turns: t.turns.map((x) => (x.seq === turns[3]!.seq ? { ...x, resent: true as const } : x)) };
    };
    const marked = new Conversations(resentFourth).page(session, true, 0, 50).turns;
    expect(marked.map((t) => t.retry)).toEqual([false, false, false, true, false]);
    expect(turns.every((t) => !t.retry)).toBe(true);
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

describe('subagents', () => {
  it("nests a subagent's turns under the tool call that spawned it, before its parent's next turn", async () => {
    const live = await liveSession(home);
    const main = new AnthropicStory(live);
    const task = { id: 'toolu_task', name: 'Task', args: JSON.stringify({ description: 'Find the retry code', subagent_type: 'Explore' }) };
    await main.call({ prompt: 'Why do requests retry forever?', text: 'Let me send an explorer.', tools: [task] });
    const explorer = new AnthropicStory(live, main.now);
    await explorer.call({
      prompt: 'Find the retry code',
      text: 'Searching.',
      tools: [{ id: 'toolu_grep', name: 'Grep', args: '{"pattern":"retry"}' }],
    });
    await explorer.call({
      results: [{ callId: 'toolu_grep', content: 'src/retry.ts:3' }],
      text: 'It is in src/retry.ts.',
      files: ['scratch.md'],
    });
    main.wait(explorer.now - main.now);
    await main.call({ results: [{ callId: task.id, content: 'It is in src/retry.ts.' }], text: 'Found it.' });
    await live.end();
    const open = stores.get(live.id);
    // What the agent rules give this session: the Task call spawned agent a1, whose calls are the second and third.
    const timeline = readTimeline(open.store, true);
    const sub = new Set([timeline.turns[1]!.seq, timeline.turns[2]!.seq]);
    const withSubagent: TimelineReader = () => ({
      ...timeline,
      agents: [...timeline.agents, { id: 'a1', parent: 'main', label: 'Explore', type: 'Explore', spawnTool: task.id }],
      turns: timeline.turns.map((t) => (sub.has(t.seq) ? { ...t, agent: 'a1' } : t)),
    });
    const page = new Conversations(withSubagent).page(open, true, 0, 10);
    expect(page.turns.map((t) => [t.agent, t.depth, t.under, t.prompt?.head ?? null])).toEqual([
      ['main', 0, null, 'Why do requests retry forever?'],
      ['a1', 1, task.id, 'Find the retry code'],
      ['a1', 1, task.id, null],
      ['main', 0, null, null],
    ]);
    expect(page.turns[0]!.tools.map((t) => [t.name, t.spawned])).toEqual([['Task', 'a1']]);
    expect(page.agents).toContainEqual({ id: 'a1', label: 'Explore', type: 'Explore' });
    // The subagent's file is its turn's, and its parent's too: the parent's turn lasts until its next one.
    expect(page.turns.map((t) => t.files.map((f) => f.path))).toEqual([['scratch.md'], [], ['scratch.md'], []]);
  });
});
