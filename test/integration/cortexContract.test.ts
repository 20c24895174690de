import { get, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../electron/api/server.ts';
import { seedSessions } from '../../electron/dev/seedSessions.ts';
import type { Exchange } from '../../electron/proxy/exchange.ts';
import { RECORDING_PIPELINE } from '../../electron/recording/pipeline.ts';
import { call } from '../helpers/apiClient.ts';
import {
  decode,
  eventDetail,
  eventsPage,
  pipelineView,
  pluginCatalog,
  readSse,
  sessionEvent,
  sessionList,
  type DecodedEvent,
} from '../helpers/cortexClient.ts';
import { modelExchange } from '../helpers/exchanges.ts';
import { liveSession, recordFileChange } from '../helpers/sessionFixture.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Every route agentop's apiclient calls (ListSessions, GetSession, GetPipeline, GetPluginCatalog,
// Stream), asked exactly as it asks, and every event kind the API sends, decoded by a client that
// mirrors Cortex's Go types and the spec's: a seeded session page by page, in both views and one
// event at a time, failed exchanges and rows another tool wrote, and a live session's MCP traffic
// read off the tail by sse.go's line parser. A field that drifts fails here.

const home = tempHome();
let api: ApiServer;
let seeded: string;
beforeAll(async () => {
  seeded = (await seedSessions(home, { sessions: 1, events: 400, seed: 5 }))[0]!.id;
  api = await startApiServer({ home, port: 0, pollMs: 20, heartbeatMs: 50 });
}, 60_000);
afterAll(async () => {
  await api.close();
  home.remove();
});

/** What a viewer tells apart: the kind of traffic and its phase, and for MCP whether the result came as an object or wrapped. */
function shapeOf(e: DecodedEvent): string {
  if (e.mcp)
    return `mcp:${e.phase}${e.mcp.result ? (Object.keys(e.mcp.result).join() === 'value' ? ':wrapped' : ':object') : ''}${e.mcp.params ? ':params' : ''}${e.mcp.error ? ':error' : ''}`;
  return `${String(e.kind)}:${e.phase}`;
}

describe('the strict client', () => {
  const good = { sessionId: 's', seq: 1, at: '2026-11-29T10:00:00.000Z', phase: 'response' };

  it('decodes a minimal event and ignores keys it does not know', () => {
    expect(decode(sessionEvent, { ...good, kind: 'http', tool: { callId: 'x' } })).toMatchObject(good);
  });

  it.each([
    ['an MCP result sent as a string (the wire before this contract)', { mcp: { method: 'tools/call', result: 'failed' } }, /mcp\.result/],
    ['MCP params sent as a string', { mcp: { method: 'tools/call', params: '{"name":"x"}' } }, /mcp\.params/],
    ['an unknown phase', { phase: 'sent' }, /phase/],
    ['a direction outside the spec', { direction: 'local' }, /direction/],
    [
      'an unknown invocation action',
      { invocations: { outbound: [{ plugin: 'policy', action: 'block' }] } },
      /invocations\.outbound\.0\.action/,
    ],
    ['a status as a string', { statusCode: '200' }, /statusCode/],
    [
      'error.code as a number (Go holds EventError.Code as a string)',
      { error: { kind: 'upstream_error', message: 'x', code: 429 } },
      /error\.code/,
    ],
    ['a fractional duration (Go holds durationMs as an int64)', { durationMs: 12.5 }, /durationMs/],
    ['a time that is not RFC 3339', { at: '2030-01-01 10:00:00' }, /at/],
    [
      'tool parameters that are not an object',
      { inference: { tools: [{ name: 't', parameters: 'x' }] } },
      /inference\.tools\.0\.parameters/,
    ],
    ['a fractional maxTokens', { inference: { maxTokens: 1.5 } }, /inference\.maxTokens/],
    ['two protocol payloads', { mcp: { method: 'ping' }, inference: {} }, /more than one/],
    ['client as a bare string (the wire before this contract; Go holds an EventClient struct)', { client: 'claude-code' }, /client/],
    ['a client version that is not a string', { client: { name: 'claude-code', version: 2 } }, /client\.version/],
  ])('refuses %s', (_, change, field) => {
    expect(() => decode(sessionEvent, { ...good, ...change })).toThrow(field);
  });
});

describe("sse.go's line parser, as readSse mirrors it", () => {
  it.each([
    ['a frame whose event name it does not know', 'event: other\nid: 9\ndata: {"a":1}\n\n', ['{"a":1}']],
    ['comments and heartbeats', ': ok\n\n: heartbeat\n\ndata: 1\n\n', ['1']],
    ['data split over lines, joined by newlines', 'data: [1,\ndata:2]\n\n', ['[1,\n2]']],
    ['CRLF line ends', 'data: 1\r\n\r\n', ['1']],
    ['an empty data line before another', 'data:\ndata: 2\n\n', ['2']],
    ['a frame with no data line', 'event: session-event\nid: 1\n\n', []],
    ['a stream that ends mid-frame', 'data: 3', ['3']],
  ])('reads %s', (_, stream, data) => {
    expect(readSse(stream)).toEqual({ data, broken: false });
  });

  it('breaks the stream at a line longer than its 4 MiB scanner buffer', () => {
    expect(readSse(`data: 1\n\ndata: "${'x'.repeat(4 * 1024 * 1024)}"\n\n`)).toEqual({ data: ['1'], broken: true });
  });
});

describe('a seeded session', () => {
  it('decodes every page of the full view, paged backward, with every event kind in it', async () => {
    const events: DecodedEvent[] = [];
    let before: number | undefined;
    for (;;) {
      const page = decode(eventsPage, (await call(api.url, `/v1/sessions/${seeded}?limit=97${before ? `&before=${before}` : ''}`)).json());
      events.unshift(...page.events);
      if (page.events.length === 0 || page.oldestSeq === undefined || page.events[0]!.seq === page.oldestSeq) break;
      before = page.events[0]!.seq;
    }
    const shapes = new Set(events.map(shapeOf));
    for (const shape of [
      'http:request',
      'http:response',
      'http:denied',
      'model:request',
      'model:response',
      'tool_call:request',
      'tool_result:response',
      'file:response',
      'mcp:request:params',
      'mcp:response:object',
      'mcp:response:wrapped',
    ])
      expect(shapes, shape).toContain(shape);
    expect(events.find((e) => e.mcp?.result && 'value' in e.mcp.result)!.mcp!.result).toEqual({ value: 'ok' });
    expect(events.find((e) => e.mcp?.params)!.mcp!.params).toMatchObject({ name: 'snapshots_create', arguments: expect.any(Object) });
  });

  it('decodes the summary view, which drops MCP params and results but keeps the call', async () => {
    const page = decode(eventsPage, (await call(api.url, `/v1/sessions/${seeded}?limit=2000&view=summary`)).json());
    expect(page.view).toBe('summary');
    const calls = page.events.filter((e) => e.mcp);
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every((e) => e.mcp!.method === 'tools/call' && e.mcp!.params === undefined && e.mcp!.result === undefined)).toBe(true);
  });

  it('decodes one event of every shape from /events/{seq}, captured bytes included', async () => {
    const { events } = decode(eventsPage, (await call(api.url, `/v1/sessions/${seeded}?limit=2000&view=summary`)).json());
    const firstOfEach = new Map<string, number>();
    for (const e of events) if (!firstOfEach.has(shapeOf(e))) firstOfEach.set(shapeOf(e), e.seq);
    expect(firstOfEach.size).toBeGreaterThanOrEqual(9);
    for (const [shape, seq] of firstOfEach) {
      const detail = decode(eventDetail, (await call(api.url, `/v1/sessions/${seeded}/events/${seq}?raw=1`)).json());
      expect(detail.seq, shape).toBe(seq);
    }
  });
});

function postTo(host: string, path: string, request: unknown, status: number, response: string, contentType: string): Exchange {
  return modelExchange(host, path, Buffer.from(JSON.stringify(request)), Buffer.from(response), {
    requestHeaders: { host, 'content-type': 'application/json', 'user-agent': 'claude-cli/2.0.14 (external, cli)' },
    responseHeaders: { 'content-type': contentType },
    status,
    durationMs: 12,
    ttfbMs: 5,
    matchedRule: 'default.allow-public',
    processName: 'claude',
    pid: 7,
  });
}

const mcpExchange = (request: unknown, response: string, contentType: string): Exchange =>
  postTo('mcp.example.com', '/mcp', request, 200, response, contentType);

describe('the routes the client calls besides the events', () => {
  it('ListSessions decodes /v1/sessions, and the archived list with its archive object', async () => {
    const { sessions } = decode(sessionList, (await call(api.url, '/v1/sessions')).json());
    expect(sessions.map((s) => s.id)).toContain(seeded);
    decode(sessionList, (await call(api.url, '/v1/sessions?archived=true')).json());
  });

  it('GetPipeline and GetPluginCatalog decode /v1/pipeline and /v1/plugins', async () => {
    const pipeline = decode(pipelineView, (await call(api.url, '/v1/pipeline')).json());
    expect(pipeline.outbound.map((p) => [p.position, p.name])).toEqual(RECORDING_PIPELINE.map((step, index) => [index + 1, step.name]));
    const { plugins } = decode(pluginCatalog, (await call(api.url, '/v1/plugins')).json());
    expect(plugins.map((p) => [p.name, p.direction])).toEqual(RECORDING_PIPELINE.map((step) => [step.name, 'outbound']));
  });
});

describe('failed exchanges and rows another tool wrote', () => {
  it('decodes in a session page as GetSession asks for it (no view): error.code a string, whole numbers, RFC 3339 times, object schemas', async () => {
    const session = await liveSession(home, 'odd-rows');
    await session.recorder.record(
      postTo(
        'api.anthropic.com',
        '/v1/messages',
        {
          model: 'claude-sonnet-4-20250514',
          max_tokens: 1024.5,
          tools: [{ name: 'lookup', description: 'a schema sent as a string', input_schema: 'not a schema' }],
          messages: [{ role: 'user', content: 'hello' }],
        },
        429,
        '{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}',
        'application/json',
      ),
    );
    // What another tool's session.db may hold: a REAL where we write INTEGER, SQLite's own time format.
    session.writer.append('net_events', {
      timestamp: '2030-01-01 10:00:00',
      domain: 'slow.example',
      decision: 'allowed',
      method: 'GET',
      path: '/',
      status_code: 504,
      duration_ms: 12.5,
      error_kind: 'upstream_timeout',
      error_message: 'slow.example:443 did not answer',
    });
    await session.writer.flush();
    const page = decode(eventsPage, (await call(api.url, `/v1/sessions/${session.id}`)).json());
    // The odd time is the session's newest, so the list's updatedAt and lastRequestAt come from it.
    const listed = decode(sessionList, (await call(api.url, '/v1/sessions')).json()).sessions.find((s) => s.id === session.id)!;
    await session.end();
    expect(listed).toMatchObject({
      updatedAt: new Date('2030-01-01 10:00:00').toISOString(),
      lastRequestAt: new Date('2030-01-01 10:00:00').toISOString(),
    });

    const model = page.events.filter((e) => e.inference);
    expect(model.map((e) => e.phase)).toEqual(['request', 'response']);
    expect(model[1]!.error).toMatchObject({ kind: 'upstream_error', code: '429' });
    expect(model[0]!.inference).not.toHaveProperty('maxTokens');
    expect(model[0]!.inference!.tools).toEqual([{ name: 'lookup', description: 'a schema sent as a string' }]);
    const timeout = page.events.find((e) => e.host === 'slow.example' && e.phase === 'response')!;
    expect(timeout).toMatchObject({
      at: new Date('2030-01-01 10:00:00').toISOString(),
      statusCode: 504,
      error: { kind: 'upstream_timeout', code: '504' },
    });
    expect(timeout).not.toHaveProperty('durationMs');
  });
});

describe('a live session with MCP traffic', () => {
  it('decodes every event the live tail delivers: MCP calls with object params and results, wrapped or not, errors, names and files', async () => {
    const live = await liveSession(home, 'mcp-live');
    // As streamOnce asks: the filter appended unescaped, Accept: text/event-stream.
    const res = await new Promise<IncomingMessage>((resolve, reject) =>
      get(`${api.url}/v1/events?session=${live.id}`, { headers: { accept: 'text/event-stream' } }, resolve).on('error', reject),
    );
    expect(res.statusCode).toBe(200);
    res.setEncoding('utf8');
    let stream = '';
    res.on('data', (chunk: string) => (stream += chunk));
    const frames = (): string[] => readSse(stream).data;
    const { recorder } = live;
    const toolCall = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search', arguments: { q: 'retry budget' } } };
    await recorder.record(
      mcpExchange(
        toolCall,
        `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'found' }] } })}\n\n`,
        'text/event-stream',
      ),
    );
    await recorder.record(
      mcpExchange({ jsonrpc: '2.0', id: 2, method: 'ping' }, '{"jsonrpc":"2.0","id":2,"result":"pong"}', 'application/json'),
    );
    await recorder.record(
      mcpExchange({ ...toolCall, id: 3 }, '{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"unknown tool"}}', 'application/json'),
    );
    recorder.event('lookup', {
      startedAt: new Date(),
      name: 'mcp.example.com',
      type: 'A',
      rcode: 'NOERROR',
      answers: ['198.18.0.9'],
      resolved: ['93.184.216.34'],
      decision: 'allowed',
      matchedRule: 'default.allow',
      processName: 'claude',
      pid: 7,
      durationMs: 2,
      error: null,
    });
    recordFileChange(live, 'notes.md', { action: 'modified', size: 3 });
    await live.writer.flush();
    // The feed finds a new session on its next round, which a loaded machine delays.
    const deadline = Date.now() + 25_000;
    while ((frames().length < 8 || !stream.includes(': heartbeat')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    res.destroy();
    await live.end();

    // Every frame names its event and counts per connection; sse.go skips both lines and the comments.
    expect(stream.startsWith(': ok\n\n')).toBe(true);
    expect(stream.match(/^event: session-event\nid: \d+\ndata: .*\n\n/gm)!.map((f) => /id: (\d+)/.exec(f)![1])).toEqual([
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7',
      '8',
    ]);
    expect(readSse(stream).broken).toBe(false);
    const events = frames().map((f) => decode(sessionEvent, JSON.parse(f)));
    expect(events.map(shapeOf)).toEqual([
      'mcp:request:params',
      'mcp:response:object',
      'mcp:request',
      'mcp:response:wrapped',
      'mcp:request:params',
      'mcp:response:error',
      'dns:response',
      'file:response',
    ]);
    expect(events[0]!.mcp).toEqual({
      method: 'tools/call',
      rpcId: '1',
      params: { name: 'search', arguments: { q: 'retry budget' } },
      isAction: true,
    });
    expect(events[1]!.mcp!.result).toEqual({ content: [{ type: 'text', text: 'found' }] });
    expect(events[3]!.mcp!.result).toEqual({ value: 'pong' });
    expect(events[5]!.mcp!.error).toEqual({ code: -32602, message: 'unknown tool' });
    expect(events[0]).toMatchObject({
      requestId: events[1]!.requestId,
      client: { name: 'claude-code', version: '2.0.14', raw: 'claude-cli/2.0.14 (external, cli)' },
      direction: 'outbound',
    });
    expect(events[0]!.invocations!.outbound!.map((i) => `${i.plugin}:${i.action}`)).toEqual(['policy:allow', 'exchange:observe']);
    expect(events[7]).not.toHaveProperty('direction');
  });
});
