import fc from 'fast-check';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../electron/api/server.ts';
import type { UsageSnapshot } from '../../electron/api/usage.ts';
import type { SessionId } from '../../electron/contract/ids.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { sessionPaths, type CapsemHome } from '../../electron/store/paths.ts';
import { call } from '../helpers/apiClient.ts';
import { anthropicExchange, capturedBody, httpsExchange } from '../helpers/exchanges.ts';
import { liveSession, now, type LiveSession } from '../helpers/sessionFixture.ts';
import { tempHome } from '../helpers/tempHome.ts';

// GET /v1/usage, /v1/pipeline and /v1/plugins through the real server on loopback, over sessions
// recorded as the proxy records them: a running one, one with an unpriced model, and one whose
// session.db was vacuumed so only main.db's ledger still knows its spend.

const home = tempHome();
let api: ApiServer;
let running: SessionId;
let unpriced: SessionId;
let vacuumed: SessionId;

/** What each model call here used: 6,200 tokens, which Claude Sonnet 4's catalog price makes $0.0075. */
const USAGE = { input: 1_000, output: 200, cacheRead: 5_000, cacheWrite: 0 };
const OVERLOADED = '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}';

/** A model call by Claude Code through the recorder; an overloaded one is answered as Anthropic answers it, 529 with no usage. */
function modelCall(live: LiveSession, model: string, fields: { overloaded?: boolean; host?: string } = {}): void {
  const overloaded = { status: 529, responseHeaders: { 'content-type': 'application/json' }, responseBody: capturedBody(OVERLOADED) };
  void live.recorder.record(
    anthropicExchange(
      { model, usage: USAGE },
      { host: fields.host ?? 'api.anthropic.com', processName: 'claude', durationMs: 300, ...(fields.overloaded ? overloaded : {}) },
    ),
  );
}

/** Ends a session and then drops its session.db, as vacuuming does: only main.db's ledger is left. */
async function vacuum(id: SessionId, end: () => Promise<void>, target: CapsemHome): Promise<void> {
  await end();
  rmSync(sessionPaths(target, id).dbPath, { force: true });
  const db = openMainDb(target);
  db.prepare("UPDATE sessions SET status = 'vacuumed', vacuumed_at = ? WHERE id = ?").run(now(), id);
  db.close();
}

async function usage(query: string): Promise<UsageSnapshot> {
  const reply = await call(api.url, `/v1/usage${query}`);
  expect(reply.status, reply.body).toBe(200);
  expect(reply.headers['content-type']).toMatch(/^application\/json/);
  return reply.json<UsageSnapshot>();
}

beforeAll(async () => {
  const a = await liveSession(home, 'work');
  modelCall(a, 'claude-sonnet-4-20250514');
  modelCall(a, 'claude-sonnet-4-20250514', { overloaded: true });
  void a.recorder.record(httpsExchange('registry.npmjs.org', '/left-pad', { processName: 'npm', durationMs: 300 }));
  await a.recorder.settled();
  await a.writer.flush();
  running = a.id;

  // A host no provider names, answering in the Messages API's shape: recorded as a model call, with no price for its model.
  const b = await liveSession(home, 'house');
  modelCall(b, 'house-model-7', { host: 'llm.corp.example' });
  await b.recorder.settled();
  await b.writer.flush();
  unpriced = b.id;

  const c = await liveSession(home, 'old');
  modelCall(c, 'claude-sonnet-4-20250514');
  await c.recorder.settled();
  await c.writer.flush();
  vacuumed = c.id;
  await vacuum(c.id, c.end, home);

  api = await startApiServer({ home, port: 0 });
}, 60_000);

afterAll(async () => {
  await api.close();
  home.remove();
});

describe('GET /v1/usage', () => {
  it('answers the last ten minutes by default, per minute, from the sessions on disk', async () => {
    const s = await usage('');
    expect(s).toMatchObject({ window: '10m', bucketSeconds: 60, group: 'none', priced: true });
    expect(s.buckets).toHaveLength(10);
    // Four exchanges on disk; the vacuumed session's spend sits at its end in the ledger, which is now too.
    // The 529 used no tokens: its model is named, but it is no priceable request.
    expect(s.totals).toMatchObject({ requests: 5, errors: 1, pricedRequests: 2, priceableRequests: 3 });
    expect(s.totals.costMicros).toBe(7_500 + 7_500);
    expect(s.totals.tokens).toBe(3 * 6_200);
    expect(s.buckets.reduce((n, b) => n + b.requests, 0)).toBe(5);
    expect(s.unpricedBy).toEqual({ 'llm.corp.example house-model-7': 1 });
  });

  it('breaks the window down by the group asked for', async () => {
    const series = async (group: string): Promise<Record<string, { requests: number }>> => {
      const s = await usage(`?group=${group}&resolution=10m`);
      expect(s.group).toBe(group);
      expect(s.buckets).toHaveLength(1);
      return s.buckets[0]!.series ?? {};
    };
    expect(Object.keys(await series('model')).sort()).toEqual(['claude-sonnet-4-20250514', 'house-model-7']);
    expect((await series('model'))['claude-sonnet-4-20250514']!.requests).toBe(3);
    expect(Object.keys(await series('session')).sort()).toEqual([running, unpriced, vacuumed].sort());
    expect(Object.keys(await series('status')).sort()).toEqual(['200', '529']);
    expect(Object.keys(await series('host')).sort()).toEqual(['api.anthropic.com', 'llm.corp.example', 'registry.npmjs.org']);
    expect(Object.keys(await series('endpoint')).sort()).toEqual(['api.anthropic.com', 'llm.corp.example']);
    expect(Object.keys(await series('agent')).sort()).toEqual(['claude', 'npm']);
  });

  it('keeps to one session, and says priced:false where nothing in it had a price', async () => {
    const one = await usage(`?session=${running}&window=1h&resolution=5m`);
    expect(one).toMatchObject({ window: '1h', bucketSeconds: 300, session: running });
    expect(one.buckets).toHaveLength(12);
    expect(one.totals.requests).toBe(3);
    const house = await usage(`?session=${unpriced}`);
    expect(house.priced).toBe(false);
    expect(house.totals).not.toHaveProperty('costMicros');
    expect(house.totals.priceableRequests).toBe(1);
    expect(house.unpricedBy).toEqual({ 'llm.corp.example house-model-7': 1 });
    const nobody = await usage('?session=no-such-session');
    expect(nobody).toMatchObject({ priced: false, totals: { requests: 0 }, session: 'no-such-session' });
  });

  it('serves today, 7d and month as one bucket spanning the window, ledger included', async () => {
    for (const window of ['today', '7d', 'month']) {
      const s = await usage(`?window=${window}&group=model`);
      expect(s.window).toBe(window);
      expect(s.buckets).toHaveLength(1);
      expect(s.bucketSeconds).toBeGreaterThan(0);
      expect(s.totals.costMicros).toBe(15_000);
      expect(s.buckets[0]!.series!['claude-sonnet-4-20250514']!.requests).toBe(3);
    }
  });

  it.each([
    ['window=abc', 'bad window'],
    ['window=', undefined],
    ['window=7h', 'exceeds 6h'],
    ['window=30s', 'shorter than the 1m bucket'],
    ['window=90s', 'not a whole number of minutes'],
    ['resolution=soon', 'bad resolution'],
    ['resolution=30s', 'finer than the 1m'],
    ['window=10m&resolution=1h', 'exceeds the window'],
    ['window=10m&resolution=3m', 'does not divide the window'],
    ['group=plugin', 'unknown group'],
    ['session=' + 'a'.repeat(129), 'session id too long'],
    ['window=today&session=abc', 'cannot be combined with a symbolic window'],
  ])('answers ?%s with the spec error', async (query, reason) => {
    const reply = await call(api.url, `/v1/usage?${query}`);
    if (reason === undefined) return expect(reply.status).toBe(200);
    expect(reply.status).toBe(400);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    expect(reply.json<{ error: string }>().error).toContain(reason);
  });

  it('never echoes the query in an error', async () => {
    const reply = await call(api.url, `/v1/usage?group=${encodeURIComponent('<script>x</script>')}`);
    expect(reply.status).toBe(400);
    expect(reply.body).not.toContain('script');
  });

  it('answers any parameters with 200 or a 400 in JSON, never a 500', async () => {
    const value = fc.oneof(
      fc.constantFrom('10m', '1h', '6h', '6h1m', 'today', '7d', 'month', '1m', '0s', '1e3m', 'model', 'host', '', running),
      fc.string({ maxLength: 12 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.constantFrom('window', 'resolution', 'group', 'session'), value), async (params) => {
        const reply = await call(api.url, `/v1/usage?${new URLSearchParams(params).toString()}`);
        expect([200, 400], reply.body).toContain(reply.status);
        const body = JSON.parse(reply.body) as { error?: string };
        if (reply.status === 400) expect(typeof body.error).toBe('string');
      }),
      { numRuns: 150 },
    );
  });

  it('refuses methods other than GET', async () => {
    const reply = await call(api.url, '/v1/usage', { method: 'POST' });
    expect(reply.status).toBe(405);
    expect(reply.headers.allow).toBe('GET');
  });

  it("answers 503 when main.db's ledger cannot be read, rather than a total missing its spend", async () => {
    const broken = tempHome();
    const gone = await liveSession(broken, 'gone');
    modelCall(gone, 'claude-sonnet-4-20250514');
    await gone.recorder.settled();
    await gone.writer.flush();
    await vacuum(gone.id, gone.end, broken);
    const db = openMainDb(broken);
    db.exec('DROP TABLE ai_usage');
    db.close();
    const server = await startApiServer({ home: broken, port: 0 });
    try {
      const reply = await call(server.url, '/v1/usage?window=today');
      expect(reply.status).toBe(503);
      expect(reply.json()).toEqual({ error: 'cost history unavailable' });
    } finally {
      await server.close();
      broken.remove();
    }
  });
});

describe('GET /v1/pipeline and /v1/plugins', () => {
  it('lists the recording steps in order with the policy in use as their config', async () => {
    writeFileSync(
      join(home.root, 'policy.json'),
      JSON.stringify({
        version: 1,
        rules: [
          { id: 'only-anthropic', action: 'allow', domains: ['api.anthropic.com'] },
          { id: 'rest', action: 'deny', domains: ['*'] },
        ],
      }),
    );
    const reply = await call(api.url, '/v1/pipeline');
    expect(reply.status).toBe(200);
    const pipeline = reply.json<{
      inbound: unknown[];
      outbound: { name: string; direction: string; position: number; readsBody: boolean; config: Record<string, unknown> }[];
    }>();
    expect(pipeline.inbound).toEqual([]);
    // Positions count from 1, as agentop reads them: it hides a plugin's position when it is 0.
    expect(pipeline.outbound.map((p) => `${p.position}:${p.name}:${p.direction}:${p.readsBody}`)).toEqual([
      '1:policy:outbound:false',
      '2:exchange:outbound:true',
      '3:model-calls:outbound:true',
      '4:mcp:outbound:true',
      '5:agent-story:outbound:true',
      '6:credential:outbound:false',
      '7:bodies:outbound:true',
      '8:websocket-frames:outbound:true',
      '9:dns:outbound:false',
      '10:file-changes:outbound:false',
      '11:commands:outbound:false',
    ]);
    expect(pipeline.outbound[0]!.config).toMatchObject({
      source: join(home.root, 'policy.json'),
      rules: [{ id: 'only-anthropic' }, { id: 'rest' }],
    });
    for (const p of pipeline.outbound) expect(p).not.toHaveProperty('onError');
  });

  it('still describes the pipeline when policy.json cannot be read, the policy and the broker saying why', async () => {
    writeFileSync(join(home.root, 'policy.json'), '{"version": 1, "rules": [');
    const reply = await call(api.url, '/v1/pipeline').finally(() => rmSync(join(home.root, 'policy.json')));
    expect(reply.status).toBe(200);
    const { outbound } = reply.json<{ outbound: { name: string; config: Record<string, unknown> }[] }>();
    for (const step of outbound.filter((p) => p.name === 'policy' || p.name === 'credential'))
      expect(step.config).toEqual({
        source: join(home.root, 'policy.json'),
        error: expect.stringMatching(/policy\.json is not valid JSON/),
      });
    expect(outbound.find((p) => p.name === 'exchange')!.config).toEqual({ store: 'session.db', tables: ['net_events'] });
  });

  it('catalogs each step with its actions', async () => {
    const reply = await call(api.url, '/v1/plugins');
    expect(reply.status).toBe(200);
    const { plugins } = reply.json<{
      plugins: { name: string; direction: string; readsBody: boolean; actions: string[]; active: boolean }[];
    }>();
    expect(plugins.map((p) => [p.name, p.direction, p.readsBody, p.actions, p.active])).toEqual([
      ['policy', 'outbound', false, ['allow', 'deny'], true],
      ['exchange', 'outbound', true, ['observe'], true],
      ['model-calls', 'outbound', true, ['observe'], true],
      ['mcp', 'outbound', true, ['observe'], true],
      ['agent-story', 'outbound', true, ['observe'], true],
      ['credential', 'outbound', false, ['modify', 'deny', 'skip'], true],
      ['bodies', 'outbound', true, ['observe'], true],
      ['websocket-frames', 'outbound', true, ['observe'], true],
      ['dns', 'outbound', false, ['observe'], true],
      ['file-changes', 'outbound', false, ['observe'], true],
      ['commands', 'outbound', false, ['observe'], true],
    ]);
  });

  it('names the new routes in the index', async () => {
    const index = (await call(api.url, '/')).body;
    for (const route of ['/v1/usage', '/v1/pipeline', '/v1/plugins']) expect(index).toContain(route);
  });
});
