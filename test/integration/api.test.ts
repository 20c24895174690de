import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../electron/api/server.ts';
import type { SessionEvent } from '../../electron/contract/sessionEvent.ts';
import { seedSessions } from '../../electron/dev/seedSessions.ts';
import { finalSeqOf, requestSeqOf } from '../../electron/sessions/eventSeq.ts';
import { SessionEventStore } from '../../electron/sessions/sessionEventStore.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { sessionPaths } from '../../electron/store/paths.ts';
import { getSession, registerSession } from '../../electron/store/registry.ts';
import { writeRollup } from '../../electron/store/rollup.ts';
import { call } from '../helpers/apiClient.ts';
import { ClaudeCodeConversation } from '../../electron/dev/claudeCodeWire.ts';
import { anthropicExchange, claudeCodeExchange, modelExchange } from '../helpers/exchanges.ts';
import { liveSession, recordFileChange } from '../helpers/sessionFixture.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';

const home = tempHome();
let api: ApiServer;
let named: string;
let other: string;
let crashed: string;

interface Page {
  id: string;
  name: string | null;
  schemaVersion: number;
  view?: string;
  events: SessionEvent[];
  totalEvents?: number;
  oldestSeq?: number;
}

beforeAll(async () => {
  const seeded = await seedSessions(home, { sessions: 3, events: 250, seed: 21 });
  [named, other, crashed] = seeded.map((s) => s.id as string) as [string, string, string];
  api = await startApiServer({ home, port: 0, allowDelete: true });
}, 60_000);
afterAll(async () => {
  await api.close();
  home.remove();
});

describe('GET /v1/sessions', () => {
  it('lists every session on disk with id and name, and the always-present fields', async () => {
    const { sessions } = (await call(api.url, '/v1/sessions')).json<{ sessions: Record<string, unknown>[] }>();
    expect(sessions.map((s) => s.id).sort()).toEqual([named, other, crashed].sort());
    for (const s of sessions) {
      for (const key of ['id', 'name', 'createdAt', 'updatedAt', 'eventCount', 'active']) expect(s, key).toHaveProperty(key);
    }
    const first = sessions.find((s) => s.id === named)!;
    expect(first.name).toBe('co-work1');
    expect(first.title).toBe('co-work1');
    expect(first.costMicros).toBeGreaterThan(0);
    expect(typeof first.inferenceHost).toBe('string');
  });

  it("counts a session's events as its pages serve them, an exchange being two", async () => {
    const { sessions } = (await call(api.url, '/v1/sessions')).json<{ sessions: { id: string; eventCount: number }[] }>();
    for (const id of [named, other, crashed]) {
      const { events } = (await call(api.url, `/v1/sessions/${id}`)).json<{ events: unknown[] }>();
      expect(sessions.find((s) => s.id === id)!.eventCount, id).toBe(events.length);
    }
  });

  it('omits what it does not know instead of sending zero', async () => {
    const empty = await liveSession(home, 'quiet');
    const { sessions } = (await call(api.url, '/v1/sessions')).json<{ sessions: Record<string, unknown>[] }>();
    const row = sessions.find((s) => s.id === empty.id)!;
    expect(row).toMatchObject({ name: 'quiet', eventCount: 0, active: true });
    for (const key of ['totalTokens', 'costMicros', 'inferenceHost', 'lastRequestAt', 'agent']) expect(row).not.toHaveProperty(key);
    await empty.end();
  });

  it("lists a session whose session.db SQLite cannot read with main.db's figures, and the others in full", async () => {
    const db = openMainDb(home);
    const broken = registerSession(db, { name: 'unreadable' });
    writeRollup(db, broken.id, null, { status: 'stopped' });
    db.close();
    const { dbPath, dir } = sessionPaths(home, broken.id);
    mkdirSync(dir, { recursive: true });
    writeFileSync(dbPath, '');
    const reply = await call(api.url, '/v1/sessions');
    expect(reply.status, reply.body).toBe(200);
    const { sessions } = reply.json<{ sessions: Record<string, unknown>[] }>();
    expect(sessions.find((s) => s.id === broken.id)).toMatchObject({ name: 'unreadable', eventCount: 0 });
    expect(sessions.find((s) => s.id === named)!.eventCount).toBeGreaterThan(0);
    rmSync(dir, { recursive: true, force: true });
  });
});

describe('GET /v1/sessions: the fields a Cortex client reads', () => {
  type Row = Record<string, unknown> & { id: string; active: boolean };
  const rows = async (): Promise<Row[]> => (await call(api.url, '/v1/sessions')).json<{ sessions: Row[] }>().sessions;
  const body = (json: unknown): Buffer => Buffer.from(JSON.stringify(json));

  it('sends title from the first prompt, totalTokens with cache tokens, procs, lastRequestAt and promptContext; active is the newest session alone', async () => {
    const live = await liveSession(home, null);
    const turn = (
      at: string,
      pid: number,
      prompt: string,
      messages: number,
      usage: { input: number; output: number; cacheRead: number; cacheWrite: number },
    ): void => {
      // The prompt, then the model's steps that make the conversation `messages` long, its system
      // prompt counted: the prompt stays the last user text, which the recorder keeps as the turn's prompt.
      const history = Array.from({ length: messages - 2 }, (_, i) => ({ role: 'assistant', content: `step ${i}` }));
      const request = {
        model: 'claude',
        system: 'you are terse',
        tools: ['Read', 'Edit', 'Bash'].map((name) => ({ name, description: name, input_schema: { type: 'object' } })),
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: '<system-reminder>ignore me</system-reminder>' },
              { type: 'text', text: prompt },
            ],
          },
          ...history,
        ],
      };
      const answer = {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude',
        content: [{ type: 'text', text: 'done' }],
        stop_reason: 'end_turn',
        usage: {
          input_tokens: usage.input,
          output_tokens: usage.output,
          cache_read_input_tokens: usage.cacheRead,
          cache_creation_input_tokens: usage.cacheWrite,
        },
      };
      void live.recorder.record({
        ...modelExchange('api.anthropic.com', '/v1/messages', body(request), body(answer)),
        startedAt: new Date(at),
        pid,
      });
    };
    const long = `Port the retry budget\nto the new client ${'and keep every test green '.repeat(5)}`;
    turn('2030-01-01T00:00:01.000Z', 41, long, 12, { input: 10, output: 20, cacheRead: 1000, cacheWrite: 300 });
    turn('2030-01-01T00:00:02.000Z', 42, 'a later prompt', 30, { input: 5, output: 7, cacheRead: 2000, cacheWrite: 0 });
    turn('2030-01-01T00:00:03.000Z', 41, 'the last one', 4, { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 });
    recordFileChange(live, 'notes.md', { ts_ms: Date.parse('2030-01-01T00:00:09.000Z') });
    await live.recorder.settled();
    await live.writer.flush();
    const row = (await rows()).find((r) => r.id === live.id)!;
    expect(row.title).toBe(`Port the retry budget to the new client ${'and keep every test green '.repeat(5)}`.slice(0, 80).trimEnd());
    expect(row.totalTokens).toBe(1330 + 2012 + 2);
    expect(row.procs).toEqual(['41', '42']);
    expect(row.lastRequestAt).toBe('2030-01-01T00:00:03.000Z');
    expect(row.updatedAt).toBe('2030-01-01T00:00:09.000Z');
    expect(row.promptContext).toEqual({ tokens: 2005, stated: false, at: '2030-01-01T00:00:02.000Z', msgs: 30 });
    const listed = await rows();
    expect(listed.filter((r) => r.active).map((r) => r.id)).toEqual([live.id]);
    await live.end();
    const ended = (await rows()).find((r) => r.id === live.id)!;
    expect(ended).toMatchObject({ title: row.title, totalTokens: row.totalTokens, procs: row.procs, promptContext: row.promptContext });
  });

  it('leaves title and the read figures out of a session with no prompt', async () => {
    const live = await liveSession(home, null);
    recordFileChange(live, 'a');
    await live.writer.flush();
    const row = (await rows()).find((r) => r.id === live.id)!;
    for (const key of ['title', 'totalTokens', 'procs', 'lastRequestAt', 'promptContext']) expect(row, key).not.toHaveProperty(key);
    await live.end();
  });
});

describe('GET /v1/sessions/{id}', () => {
  it('pages backward through the whole session, yielding every seq exactly once', async () => {
    const seen: number[] = [];
    let before: number | undefined;
    let total = 0;
    for (;;) {
      const page = (await call(api.url, `/v1/sessions/${named}?limit=37${before ? `&before=${before}` : ''}`)).json<Page>();
      expect(page.schemaVersion).toBe(1);
      if (page.events.length === 0) break;
      total = page.totalEvents ?? total;
      expect(page.events.map((e) => e.seq)).toEqual([...page.events.map((e) => e.seq)].sort((a, b) => a - b));
      seen.unshift(...page.events.map((e) => e.seq));
      before = page.events[0]!.seq;
      if (before === page.oldestSeq) break;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBe(total);
    const whole = (await call(api.url, `/v1/sessions/${named}?limit=2000`)).json<Page>();
    expect(seen).toEqual(whole.events.map((e) => e.seq));
  });

  it("sends each exchange as its request then its response, paired by requestId, with each phase's fields", async () => {
    const { events } = (await call(api.url, `/v1/sessions/${named}?limit=2000`)).json<Page>();
    const exchanges = new Map<string, SessionEvent[]>();
    for (const e of events) if (e.requestId !== undefined) exchanges.set(e.requestId, [...(exchanges.get(e.requestId) ?? []), e]);
    expect(exchanges.size).toBeGreaterThan(20);
    for (const [requestId, pair] of exchanges) {
      expect(
        pair.map((e) => e.phase),
        requestId,
      ).toEqual(['request', pair[1]!.phase === 'denied' ? 'denied' : 'response']);
      const [request, answer] = pair as [SessionEvent, SessionEvent];
      expect(answer.seq).toBe(request.seq + 1);
      expect(request).not.toHaveProperty('statusCode');
      expect(request).not.toHaveProperty('bytesDown');
      expect(answer).not.toHaveProperty('bytesUp');
      expect(request.invocations!.outbound[0]!.plugin).toBe('policy');
      if (request.inference) {
        expect(request.inference.messages).toBeDefined();
        expect(request.inference).not.toHaveProperty('completion');
        expect(answer.inference).not.toHaveProperty('messages');
      }
    }
    const bySeq = new Map(events.map((e) => [e.seq, e]));
    for (const e of events) {
      if (e.kind === 'file') expect(e).not.toHaveProperty('direction');
      else expect(e.direction).toBe('outbound');
      // A tool call points at the response that asked for it, a result at the request that carried it.
      if (e.tool?.modelCallSeq !== undefined)
        expect(bySeq.get(e.tool.modelCallSeq)).toMatchObject({ kind: 'model', phase: e.kind === 'tool_call' ? 'response' : 'request' });
    }
  });

  it('sends totalEvents and oldestSeq only when the response is not the whole session', async () => {
    const whole = (await call(api.url, `/v1/sessions/${named}?limit=2000`)).json<Page>();
    expect(whole).not.toHaveProperty('totalEvents');
    expect(whole).not.toHaveProperty('oldestSeq');
    const part = (await call(api.url, `/v1/sessions/${named}?limit=5`)).json<Page>();
    expect(part.totalEvents).toBe(whole.events.length);
    expect(part.oldestSeq).toBe(whole.events[0]!.seq);
    expect(part.events.map((e) => e.seq)).toEqual(whole.events.slice(-5).map((e) => e.seq));
  });

  it('falls back to the default limit on a bad value and caps it at 2000', async () => {
    for (const bad of ['abc', '-3', '0', '1e3']) {
      const page = (await call(api.url, `/v1/sessions/${named}?limit=${bad}`)).json<Page>();
      expect(page.events.length, bad).toBe(
        Math.min(500, (await call(api.url, `/v1/sessions/${named}?limit=2000`)).json<Page>().events.length),
      );
    }
  });

  it('serves the tail with 200 for a bad before (abc, empty, negative, fractional, zero)', async () => {
    const tail = (await call(api.url, `/v1/sessions/${named}?limit=7`)).json<Page>();
    for (const bad of ['abc', '', '-3', '2.5', '0', '1e3']) {
      const reply = await call(api.url, `/v1/sessions/${named}?limit=7&before=${bad}`);
      expect(reply.status, bad).toBe(200);
      expect(
        reply.json<Page>().events.map((e) => e.seq),
        bad,
      ).toEqual(tail.events.map((e) => e.seq));
    }
  });

  it('summary drops exactly the listed fields and nothing else, and says so', async () => {
    const full = (await call(api.url, `/v1/sessions/${named}?limit=2000`)).json<Page>();
    const summary = (await call(api.url, `/v1/sessions/${named}?limit=2000&view=summary`)).json<Page>();
    expect(summary.view).toBe('summary');
    expect(full).not.toHaveProperty('view');
    expect((await call(api.url, `/v1/sessions/${named}?view=Summary`)).json<Page>()).not.toHaveProperty('view');
    expect(summary.events.length).toBe(full.events.length);
    let models = 0;
    full.events.forEach((event, i) => {
      const expected = structuredClone(event) as SessionEvent;
      const got = structuredClone(summary.events[i]!) as SessionEvent;
      if (expected.inference) {
        models += 1;
        for (const key of [
          'messages',
          'tools',
          'toolCalls',
          'toolResults',
          'historyToolCalls',
          'toolChoice',
          'temperature',
          'maxTokens',
          'topP',
        ] as const)
          delete expected.inference[key];
        if (event.phase === 'request') {
          expect(got.inference!.messageCount).toBe(event.inference!.messages!.length);
          expect(got.inference!.toolCount).toBe(event.inference!.tools!.length);
          delete got.inference!.messageCount;
          delete got.inference!.toolCount;
        }
      }
      if (expected.mcp) {
        delete expected.mcp.params;
        delete expected.mcp.result;
      }
      expect(got).toEqual(expected);
    });
    expect(models).toBeGreaterThan(5);
  });

  it('refuses a display name with a hint to resolve it, and an unknown id', async () => {
    const byName = await call(api.url, '/v1/sessions/co-work1');
    expect(byName.status).toBe(404);
    expect(byName.json().error).toMatch(/display name; routes take session ids, so resolve the name first/);
    // The window's 8 characters name one session to the CLI; a route still takes the whole id only.
    const byPrefix = await call(api.url, `/v1/sessions/${other.slice(0, 8)}`);
    expect(byPrefix.status).toBe(404);
    expect(byPrefix.json().error).toBe(
      `session not found: "${other.slice(0, 8)}" is the start of an id; routes take whole session ids (it starts ${other})`,
    );
    const unknown = await call(api.url, '/v1/sessions/0b5c1c3e-1111-4222-8333-444455556666');
    expect(unknown.status).toBe(404);
    expect(unknown.json()).toEqual({ error: 'session not found' });
  });

  it('never serves one session rows of another: a session named co-work1 gets its own', async () => {
    for (const id of [named, other]) {
      const page = (await call(api.url, `/v1/sessions/${id}?limit=2000`)).json<Page>();
      expect(page.id).toBe(id);
      expect(new Set(page.events.map((e) => e.sessionId))).toEqual(new Set([id]));
      const store = SessionEventStore.open(id, sessionPaths(home, id as never).dbPath);
      expect(page.events.length).toBe(store.bounds().total);
      store.close();
    }
    const a = (await call(api.url, `/v1/sessions/${named}?limit=2000`)).json<Page>().events.map((e) => e.eventId);
    const b = (await call(api.url, `/v1/sessions/${other}?limit=2000`)).json<Page>().events.map((e) => e.eventId);
    expect(a.filter((x) => b.includes(x))).toEqual([]);
  });
});

describe('GET /v1/sessions/{id}/events/{seq}', () => {
  it('returns the full event with schemaVersion, and the captured bytes with ?raw=1', async () => {
    const page = (await call(api.url, `/v1/sessions/${named}?limit=2000&view=summary`)).json<Page>();
    const request = page.events.find((e) => e.kind === 'model' && e.phase === 'request')!;
    const detail = (await call(api.url, `/v1/sessions/${named}/events/${request.seq}?raw=1`)).json<
      SessionEvent & { schemaVersion: number }
    >();
    expect(detail.schemaVersion).toBe(1);
    expect(detail.seq).toBe(request.seq);
    expect(JSON.parse(detail.raw!.request!)).toHaveProperty('messages');
    expect(detail.raw).not.toHaveProperty('response');
    expect(detail.inference!.messages!.length).toBeGreaterThan(0);
    const response = (await call(api.url, `/v1/sessions/${named}/events/${request.seq + 1}?raw=1`)).json<SessionEvent>();
    expect(response).toMatchObject({ phase: 'response', requestId: request.requestId });
    expect(response.raw!.response!.status).toBe(200);
    expect(response.raw).not.toHaveProperty('request');
  });

  it('answers 404 rather than a neighbour', async () => {
    const missing = await call(api.url, `/v1/sessions/${named}/events/999999`);
    expect(missing.status).toBe(404);
    expect(missing.json()).toEqual({ error: 'event not found' });
    for (const bad of ['0', 'abc', '-1', '1.5', '1e1']) {
      const reply = await call(api.url, `/v1/sessions/${named}/events/${bad}`);
      expect(reply.status, bad).toBe(404);
      expect(reply.json(), bad).toEqual({ error: 'event not found' });
    }
  });
});

describe('GET /v1/sessions/{id}/timeline', () => {
  it('has a turn per model call, a tool span per tool call ending at its result, and a host per request', async () => {
    const t = (await call(api.url, `/v1/sessions/${named}/timeline`)).json<{
      id: string;
      lastSeq: number;
      agents: unknown[];
      turns: { seq: number; finish?: string }[];
      tools: { id: string; start: string; end?: string }[];
      hosts: { kind: string }[];
    }>();
    const db = openMainDb(home);
    const totals = getSession(db, named as never)!.totals;
    db.close();
    expect(t.id).toBe(named);
    expect(t.agents).toEqual([{ id: 'main', label: 'main agent' }]);
    expect(t.turns.length).toBe(totals.modelCalls);
    expect(t.tools.length).toBe(totals.toolCalls);
    expect(t.hosts.length).toBe(totals.requests);
    expect(t.hosts.some((h) => h.kind === 'llm')).toBe(true);
    for (const tool of t.tools) expect(tool.end! >= tool.start).toBe(true);
    const { events } = (await call(api.url, `/v1/sessions/${named}?limit=2000`)).json<Page>();
    expect(t.lastSeq).toBe(events.at(-1)!.seq);
    expect(t.turns.every((turn) => events.some((e) => e.seq === turn.seq && e.kind === 'model' && e.phase === 'request'))).toBe(true);
  });

  it('keeps only spans overlapping ?from/?to, but always every agent', async () => {
    const all = (await call(api.url, `/v1/sessions/${named}/timeline`)).json<{
      start: string;
      end: string;
      turns: unknown[];
      agents: unknown[];
    }>();
    const none = (await call(api.url, `/v1/sessions/${named}/timeline?to=2000-01-01T00:00:00Z`)).json<{
      turns: unknown[];
      hosts: unknown[];
      agents: unknown[];
    }>();
    expect(none.turns).toEqual([]);
    expect(none.hosts).toEqual([]);
    expect(none.agents).toEqual(all.agents);
    const everything = (await call(api.url, `/v1/sessions/${named}/timeline?from=${all.start}&to=${all.end}`)).json<{ turns: unknown[] }>();
    expect(everything.turns.length).toBe(all.turns.length);
    expect((await call(api.url, `/v1/sessions/${named}/timeline?from=yesterday`)).status).toBe(400);
  });

  it("serves a Claude Code session's story, its subagents always whole however the spans are clipped, and 404 for an unknown session", async () => {
    const live = await liveSession(home, null);
    const main = new ClaudeCodeConversation().say('Survey the code');
    const spawn = {
      id: 'toolu_s',
      name: 'Agent',
      args: JSON.stringify({ description: 'Survey', prompt: 'Survey', subagent_type: 'Explore' }),
    };
    await live.recorder.record(claudeCodeExchange(main.call({ tools: [spawn] }), new Date('2026-11-29T10:00:00Z')));
    const sub = new ClaudeCodeConversation({ id: 'a1bf9707ee0e71012' }).say('Survey');
    await live.recorder.record(claudeCodeExchange(sub.call(), new Date('2026-11-29T10:00:05Z')));
    await live.writer.flush();
    const whole = (await call(api.url, `/v1/sessions/${live.id}/timeline`)).json<{
      agents: { id: string; parent?: string; spawnTool?: string }[];
    }>();
    expect(whole.agents.map((a) => [a.id, a.parent, a.spawnTool])).toEqual([
      ['main', undefined, undefined],
      ['a1bf9707ee0e71012', 'main', 'toolu_s'],
    ]);
    const late = (await call(api.url, `/v1/sessions/${live.id}/timeline?from=2026-11-29T10:00:04Z`)).json<{
      agents: unknown[];
      turns: { agent: string }[];
    }>();
    expect(late.agents).toEqual(whole.agents);
    expect(late.turns.map((t) => t.agent)).toEqual(['a1bf9707ee0e71012']);
    await live.end();
    const unknown = await call(api.url, '/v1/sessions/00000000-0000-4000-8000-000000000000/timeline');
    expect(unknown.status).toBe(404);
  });

  it('is recomputed when the session gets a newer event', async () => {
    const live = await liveSession(home, null);
    await live.recorder.record(anthropicExchange());
    await live.writer.flush();
    const first = (await call(api.url, `/v1/sessions/${live.id}/timeline`)).json<{ lastSeq: number; turns: unknown[] }>();
    await live.recorder.record(anthropicExchange());
    await live.writer.flush();
    const second = (await call(api.url, `/v1/sessions/${live.id}/timeline`)).json<{ lastSeq: number; turns: unknown[] }>();
    // A recorded call is two rows, its exchange's and its model_calls row, the second holding its two events.
    expect([first.lastSeq, first.turns.length]).toEqual([finalSeqOf(2), 1]);
    expect([second.lastSeq, second.turns.length]).toEqual([finalSeqOf(4), 2]);
    await live.end();
  });
});

describe('GET /v1/sessions/{id}/search', () => {
  it('finds a case-insensitive Unicode substring in bodies, seqs ascending, with lastSeq', async () => {
    const live = await liveSession(home, null);
    await live.recorder.record(
      modelExchange('example.com', '/a', Buffer.from('{"note":"Die GROẞE Straße in Zürich"}'), Buffer.from('{"answer":"Grüezi"}')),
    );
    await live.recorder.record(anthropicExchange({ model: 'claude', prompt: 'please fix the Retry Budget' }));
    recordFileChange(live, 'retry budget.txt');
    await live.recorder.settled();
    await live.writer.flush();
    const seqOf = (sql: string): number => sessionRows<{ seq: number }>(sessionPaths(home, live.id).dbPath, sql)[0]!.seq;
    const plain = seqOf("SELECT seq FROM net_events WHERE domain = 'example.com'");
    const model = seqOf("SELECT seq FROM net_events WHERE domain = 'api.anthropic.com'");
    const call2 = seqOf('SELECT seq FROM model_calls');
    const search = async (q: string) =>
      (await call(api.url, `/v1/sessions/${live.id}/search?q=${encodeURIComponent(q)}`)).json<{
        seqs: number[];
        lastSeq: number;
        schemaVersion: number;
      }>();
    // The model call's exchange is its model_calls row's two events; a request body matches the request event.
    expect(model + 1).toBe(call2);
    expect(await search('retry budget')).toEqual({ seqs: [requestSeqOf(call2)], lastSeq: finalSeqOf(4), schemaVersion: 1 });
    expect((await search('zürich')).seqs).toEqual([requestSeqOf(plain)]);
    expect((await search('ZÜRICH')).seqs).toEqual([requestSeqOf(plain)]);
    expect((await search('grüezi')).seqs).toEqual([finalSeqOf(plain)]);
    // The call's answer came back (as an event stream): its response matches too.
    expect((await search('e')).seqs).toEqual([requestSeqOf(plain), finalSeqOf(plain), requestSeqOf(call2), finalSeqOf(call2)]);
    expect((await search('nowhere to be found')).seqs).toEqual([]);
    await live.end();
  });

  it('answers 400 to an empty q and 404 to an unknown session', async () => {
    const empty = await call(api.url, `/v1/sessions/${named}/search?q=`);
    expect(empty.status).toBe(400);
    expect(empty.json()).toEqual({ error: 'q is required' });
    const unknown = await call(api.url, '/v1/sessions/0b5c1c3e-1111-4222-8333-444455556666/search?q=x');
    expect(unknown.status).toBe(404);
    expect(unknown.json()).toEqual({ error: 'session not found' });
  });
});

describe('guards', () => {
  const routes = [
    '/',
    '/healthz',
    '/v1/sessions',
    '/v1/events',
    () => `/v1/sessions/${named}`,
    () => `/v1/sessions/${named}/timeline`,
    () => `/v1/sessions/${named}/search?q=a`,
    () => `/v1/sessions/${named}/events/1`,
  ];
  const paths = (): string[] => routes.map((r) => (typeof r === 'string' ? r : r()));

  it('answers 403 to a non-loopback Host on every route (DNS rebinding)', async () => {
    for (const path of paths()) {
      for (const host of ['evil.example', 'evil.example:47601', '127.0.0.1.evil.example', '10.0.0.5']) {
        const reply = await call(api.url, path, { headers: { host } });
        expect(reply.status, `${host} ${path}`).toBe(403);
      }
    }
    for (const host of ['localhost', '127.0.0.1:1', '[::1]:8080'])
      expect((await call(api.url, '/healthz', { headers: { host } })).status, host).toBe(200);
  });

  it('answers 403 to any Origin header on every route', async () => {
    for (const path of paths()) {
      const reply = await call(api.url, path, { headers: { origin: 'http://127.0.0.1' } });
      expect(reply.status, path).toBe(403);
    }
  });

  it('DELETE only: other methods on the delete routes are refused and delete nothing', async () => {
    for (const method of ['POST', 'PUT', 'PATCH']) {
      expect((await call(api.url, '/v1/sessions', { method })).status, method).toBe(405);
      expect((await call(api.url, `/v1/sessions/${crashed}`, { method })).status, method).toBe(405);
    }
    expect(existsSync(sessionPaths(home, crashed as never).dbPath)).toBe(true);
  });

  it('DELETE with a non-loopback Host or an Origin is refused', async () => {
    expect((await call(api.url, `/v1/sessions/${crashed}`, { method: 'DELETE', headers: { host: 'evil.example' } })).status).toBe(403);
    expect((await call(api.url, `/v1/sessions/${crashed}`, { method: 'DELETE', headers: { origin: 'http://localhost' } })).status).toBe(
      403,
    );
    expect((await call(api.url, '/v1/sessions', { method: 'DELETE', headers: { origin: 'null' } })).status).toBe(403);
    expect(existsSync(sessionPaths(home, crashed as never).dbPath)).toBe(true);
  });

  it('DELETE is refused unless the configuration allows it', async () => {
    const locked = await startApiServer({ home, port: 0 });
    try {
      const reply = await call(locked.url, `/v1/sessions/${crashed}`, { method: 'DELETE' });
      expect(reply.status).toBe(403);
      expect(reply.json().error).toMatch(/not allowed by this server's configuration/);
      expect((await call(locked.url, '/v1/sessions', { method: 'DELETE' })).status).toBe(403);
    } finally {
      await locked.close();
    }
    expect(existsSync(sessionPaths(home, crashed as never).dbPath)).toBe(true);
  });

  it('an allowed DELETE erases the events but keeps the cost ledger; a running session is refused', async () => {
    const db = openMainDb(home);
    const before = getSession(db, crashed as never)!;
    const reply = await call(api.url, `/v1/sessions/${crashed}`, { method: 'DELETE' });
    expect(reply.status).toBe(200);
    expect(reply.json()).toMatchObject({ sessions: 1, archivedSessions: 0 });
    expect(reply.json<{ bytes: number }>().bytes).toBeGreaterThan(0);
    expect(existsSync(sessionPaths(home, crashed as never).dir)).toBe(false);
    const after = getSession(db, crashed as never)!;
    expect(after.status).toBe('erased');
    expect(after.totals).toEqual(before.totals);
    db.close();
    expect((await call(api.url, `/v1/sessions/${crashed}`)).status).toBe(404);
    const running = await liveSession(home, null);
    expect((await call(api.url, `/v1/sessions/${running.id}`, { method: 'DELETE' })).status).toBe(409);
    await running.end();
    expect((await call(api.url, '/v1/sessions/0b5c1c3e-1111-4222-8333-444455556666', { method: 'DELETE' })).status).toBe(404);
  });
});

describe('index', () => {
  it('GET / lists the routes and /healthz answers ok', async () => {
    expect((await call(api.url, '/')).body).toMatch(/^Capsem session events API\n.*\/v1\/sessions\/\{id\}\/search/s);
    expect((await call(api.url, '/healthz')).body).toBe('ok\n');
    expect((await call(api.url, '/nope')).status).toBe(404);
  });
});
