import { get, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../electron/api/server.ts';
import { seedSessions } from '../../electron/dev/seedSessions.ts';
import { EMPTY_BODY, type Exchange } from '../../electron/proxy/exchange.ts';
import { ExchangeRecorder } from '../../electron/proxy/exchangeRecorder.ts';
import { call } from '../helpers/apiClient.ts';
import { decode, eventDetail, eventsPage, sessionEvent, type DecodedEvent } from '../helpers/cortexClient.ts';
import { liveSession, now } from '../helpers/sessionFixture.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Every event kind the API sends, decoded by a client written from the spec's types alone: a
// seeded session page by page, in both views and one event at a time, and a live session's MCP
// traffic as the live tail delivers it. A field that drifts from the spec fails here.

const home = tempHome();
let api: ApiServer;
let seeded: string;
beforeAll(async () => {
  seeded = (await seedSessions(home, { sessions: 1, events: 400, seed: 5 }))[0]!.id;
  api = await startApiServer({ home, port: 0, pollMs: 20 });
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
    ['two protocol payloads', { mcp: { method: 'ping' }, inference: {} }, /more than one/],
  ])('refuses %s', (_, change, field) => {
    expect(() => decode(sessionEvent, { ...good, ...change })).toThrow(field);
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

function mcpExchange(request: unknown, response: string, contentType: string): Exchange {
  const req = Buffer.from(JSON.stringify(request));
  const res = Buffer.from(response);
  return {
    startedAt: new Date(),
    host: 'mcp.example.com',
    port: 443,
    scheme: 'https',
    kind: 'request',
    method: 'POST',
    path: '/mcp',
    query: null,
    requestHeaders: { host: 'mcp.example.com', 'content-type': 'application/json', 'user-agent': 'claude-cli/2.0.14 (external, cli)' },
    responseHeaders: { 'content-type': contentType },
    status: 200,
    requestBody: { ...EMPTY_BODY, bytes: req, total: req.length },
    responseBody: { bytes: res, total: res.length, truncated: false },
    durationMs: 12,
    ttfbMs: 5,
    decision: 'allowed',
    matchedRule: 'default.allow-public',
    processName: 'claude',
    pid: 7,
    error: null,
    eventId: null,
    parseError: null,
  };
}

describe('a live session with MCP traffic', () => {
  it('decodes every event the live tail delivers: MCP calls with object params and results, wrapped or not, errors, names and files', async () => {
    const live = await liveSession(home, 'mcp-live');
    const frames: unknown[] = [];
    const res = await new Promise<IncomingMessage>((resolve, reject) =>
      get(new URL(`/v1/events?session=${live.id}`, api.url), resolve).on('error', reject),
    );
    res.setEncoding('utf8');
    let buffered = '';
    res.on('data', (chunk: string) => {
      buffered += chunk;
      const parts = buffered.split('\n\n');
      buffered = parts.pop()!;
      for (const frame of parts)
        for (const line of frame.split('\n')) if (line.startsWith('data: ')) frames.push(JSON.parse(line.slice(6)));
    });
    const recorder = new ExchangeRecorder(live.writer, 1 << 20);
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
    live.writer.append('dns_events', {
      timestamp: now(),
      name: 'mcp.example.com',
      type: 'A',
      rcode: 'NOERROR',
      answers: '["198.18.0.9"]',
      resolved: '["93.184.216.34"]',
      decision: 'allowed',
      process_name: 'claude',
      pid: 7,
      duration_ms: 2,
    });
    live.writer.append('fs_events', { timestamp: now(), action: 'modified', path: 'notes.md', size: 3 });
    await live.writer.flush();
    // The feed finds a new session on its next round, which a loaded machine delays.
    const deadline = Date.now() + 25_000;
    while (frames.length < 8 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    res.destroy();
    await live.end();

    const events = frames.map((f) => decode(sessionEvent, f));
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
    expect(events[0]).toMatchObject({ requestId: events[1]!.requestId, client: 'claude-code', direction: 'outbound' });
    expect(events[0]!.invocations!.outbound!.map((i) => `${i.plugin}:${i.action}`)).toEqual(['policy:allow', 'recorder:observe']);
    expect(events[7]).not.toHaveProperty('direction');
  });
});
