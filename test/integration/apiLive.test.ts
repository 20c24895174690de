import { get, type ClientRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../electron/api/server.ts';
import type { SessionEvent } from '../../electron/contract/sessionEvent.ts';
import { sessionPaths } from '../../electron/store/paths.ts';
import { call } from '../helpers/apiClient.ts';
import { anthropicExchange, httpsExchange } from '../helpers/exchanges.ts';
import { liveSession, recordFileChange } from '../helpers/sessionFixture.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';

const home = tempHome();
let api: ApiServer;
beforeAll(async () => {
  api = await startApiServer({ home, port: 0, heartbeatMs: 100, pollMs: 20, liveLimits: { maxBufferedBytes: 256 << 10, stallMs: 500 } });
});
afterAll(async () => {
  await api.close();
  home.remove();
});

interface Tail {
  readonly frames: string[];
  readonly events: SessionEvent[];
  readonly comments: string[];
  readonly response: Promise<IncomingMessage>;
  readonly request: ClientRequest;
  until(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  close(): void;
}

function tail(path: string, options: { paused?: boolean } = {}): Tail {
  const frames: string[] = [];
  const events: SessionEvent[] = [];
  const comments: string[] = [];
  let buffered = '';
  const waiters: (() => void)[] = [];
  let resolveResponse!: (res: IncomingMessage) => void;
  const response = new Promise<IncomingMessage>((r) => (resolveResponse = r));
  const request = get(new URL(path, api.url), (res) => {
    resolveResponse(res);
    if (options.paused) res.pause();
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffered += chunk;
      const chunks = buffered.split('\n\n');
      buffered = chunks.pop()!;
      for (const frame of chunks) {
        if (!frame.startsWith(':')) frames.push(frame);
        for (const line of frame.split('\n')) {
          if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)) as SessionEvent);
          else if (line.startsWith(':')) comments.push(line);
        }
      }
      for (const w of waiters.splice(0)) w();
    });
  });
  request.on('error', () => undefined);
  return {
    frames,
    events,
    comments,
    response,
    request,
    until: async (predicate, timeoutMs = 15_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!predicate()) {
        if (Date.now() > deadline)
          throw new Error(
            `timed out; have ${events.length} events; hub published ${api.hub.published}, feed errors ${api.feed.errors} ${api.feed.lastError}`,
          );
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 50);
        });
      }
    },
    close: () => request.destroy(),
  };
}

describe('GET /v1/events', () => {
  it('opens with ": ok", then delivers every new event in order under load', async () => {
    const sub = tail('/v1/events');
    await sub.until(() => sub.comments.includes(': ok'));
    const live = await liveSession(home, 'busy');
    const total = 3000;
    for (let i = 0; i < total; i++) {
      void live.recorder.record(httpsExchange(`h${i % 7}.example`, `/${i}`));
      if (i % 500 === 0) await new Promise((r) => setImmediate(r));
    }
    await live.recorder.settled();
    await live.writer.flush();
    // Each exchange is its request and its response.
    await sub.until(() => sub.events.filter((e) => e.sessionId === live.id).length >= 2 * total);
    const mine = sub.events.filter((e) => e.sessionId === live.id);
    expect(mine.map((e) => e.seq)).toEqual(Array.from({ length: 2 * total }, (_, i) => i + 1));
    expect(mine.slice(84, 86).map((e) => [e.httpPath, e.phase])).toEqual([
      ['/42', 'request'],
      ['/42', 'response'],
    ]);
    sub.close();
    await live.end();
  });

  it('filters to one session with ?session=', async () => {
    const a = await liveSession(home, null);
    const b = await liveSession(home, null);
    const sub = tail(`/v1/events?session=${a.id}`);
    await sub.until(() => sub.comments.includes(': ok'));
    for (let i = 0; i < 50; i++) {
      recordFileChange(a, `a${i}`);
      recordFileChange(b, `b${i}`);
    }
    await Promise.all([a.writer.flush(), b.writer.flush()]);
    await sub.until(() => sub.events.length >= 50);
    await new Promise((r) => setTimeout(r, 100));
    expect(new Set(sub.events.map((e) => e.sessionId))).toEqual(new Set([a.id]));
    expect(sub.events.map((e) => e.file!.path)).toEqual(Array.from({ length: 50 }, (_, i) => `a${i}`));
    sub.close();
    await Promise.all([a.end(), b.end()]);
  });

  it('sends the comment ": heartbeat" while nothing happens', async () => {
    const sub = tail('/v1/events');
    await sub.until(() => sub.comments.filter((c) => c === ': heartbeat').length >= 2, 5000);
    sub.close();
  });

  it('frames each event as event: session-event, a per-connection id, then data, under exactly the SSE headers', async () => {
    const early = tail('/v1/events');
    await early.until(() => early.comments.includes(': ok'));
    const live = await liveSession(home, null);
    recordFileChange(live, 'first');
    await live.writer.flush();
    await early.until(() => early.events.some((e) => e.sessionId === live.id));
    const late = tail(`/v1/events?session=${live.id}`);
    await late.until(() => late.comments.includes(': ok'));
    recordFileChange(live, 'second');
    await live.writer.flush();
    await late.until(() => late.events.length === 1);
    await early.until(() => early.events.filter((e) => e.sessionId === live.id).length === 2);
    const [frame] = late.frames;
    expect(frame).toBe(`event: session-event\nid: 1\ndata: ${JSON.stringify(late.events[0])}`);
    // The session's second row: a row with one event is seq 2s.
    expect(late.events[0]!.seq).toBe(4);
    const ids = early.frames.map((f) => Number(/^event: session-event\nid: (\d+)\ndata: /.exec(f)![1]));
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
    const { headers } = await late.response;
    expect([headers['content-type'], headers['cache-control'], headers['x-accel-buffering']]).toEqual([
      'text/event-stream',
      'no-cache',
      'no',
    ]);
    const transport = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date']);
    expect(
      Object.keys(headers)
        .filter((h) => !transport.has(h))
        .sort(),
    ).toEqual(['cache-control', 'content-type', 'x-accel-buffering']);
    early.close();
    late.close();
    await live.end();
  });

  it('drops and counts a subscriber that stops reading, while others and the writer carry on', async () => {
    const before = api.hub.dropped;
    const slow = tail('/v1/events', { paused: true });
    const fast = tail('/v1/events');
    await fast.until(() => fast.comments.includes(': ok'));
    await slow.response;
    const live = await liveSession(home, null);
    const big = JSON.stringify({ command: 'x'.repeat(20_000) });
    const total = 1500;
    for (let i = 0; i < total; i++) {
      void live.recorder.record(anthropicExchange({ tools: [{ id: `c${i}`, name: 'Bash', args: big }] }));
      if (live.writer.needsDrain) await live.writer.drained();
      if (i % 100 === 0) await new Promise((r) => setImmediate(r));
    }
    await live.recorder.settled();
    await live.writer.flush();
    // Every row the recording made is on disk, each model call with the tool call it asked for.
    expect(live.writer.stats.committed).toBe(live.writer.stats.appended);
    expect(sessionRows(sessionPaths(home, live.id).dbPath, 'SELECT call_id FROM tool_calls')).toHaveLength(total);
    const toolCalls = (events: SessionEvent[]): number => events.filter((e) => e.sessionId === live.id && e.kind === 'tool_call').length;
    await fast.until(() => toolCalls(fast.events) >= total, 30_000);
    expect(api.hub.dropped).toBeGreaterThan(before);
    const status = (await call(api.url, '/v1/status')).json<{ sse: { dropped: number } }>();
    expect(status.sse.dropped).toBe(api.hub.dropped);
    slow.close();
    fast.close();
    await live.end();
  }, 60_000);

  it('takes any string in ?session= as a filter: an unknown one streams 200 and matches nothing', async () => {
    const sub = tail('/v1/events?session=co-work1');
    expect((await sub.response).statusCode).toBe(200);
    await sub.until(() => sub.comments.includes(': ok'));
    const live = await liveSession(home, 'co-work1');
    recordFileChange(live, 'x');
    await live.writer.flush();
    await sub.until(() => sub.comments.includes(': heartbeat'));
    await new Promise((r) => setTimeout(r, 200));
    expect(sub.events).toEqual([]);
    sub.close();
    await live.end();
  });
});
