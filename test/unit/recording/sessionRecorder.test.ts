import Database from 'better-sqlite3';
import fc from 'fast-check';
import { gzipSync } from 'node:zlib';
import { afterAll, expect, it } from 'vitest';
import type { Exchange } from '../../../electron/proxy/exchange.ts';
import { SessionRecorder } from '../../../electron/recording/sessionRecorder.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { httpsExchange } from '../../helpers/exchanges.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());

function exchange(path: string, body: Buffer, contentEncoding?: string): Exchange {
  return httpsExchange('files.example', path, {
    responseHeaders: { 'content-type': 'text/plain', ...(contentEncoding ? { 'content-encoding': contentEncoding } : {}) },
    responseBody: { bytes: body, total: body.length, truncated: false },
    processName: 'curl',
  });
}

it('records exchanges in the order they finished, whether or not their bodies needed decoding, and a broken body loses nothing else', async () => {
  const live = await liveSession(home);
  const recorder = new SessionRecorder(live.writer, 1 << 20);
  void recorder.record(exchange('/first-plain', Buffer.from('one')));
  void recorder.record(exchange('/gzipped', gzipSync('two'), 'gzip'));
  void recorder.record(exchange('/after-gzip', Buffer.from('three')));
  void recorder.record(exchange('/broken-gzip', Buffer.from('not gzip at all'), 'gzip'));
  await recorder.record(exchange('/last', Buffer.from('four')));
  await live.writer.flush();
  const db = new Database(sessionPaths(home, live.id).dbPath, { readonly: true });
  const rows = db
    .prepare(
      "SELECT n.path, n.error_kind, b.body FROM net_events n LEFT JOIN event_body_blobs b ON b.event_id = n.event_id AND b.direction = 'response' ORDER BY n.seq",
    )
    .all() as { path: string; error_kind: string | null; body: Buffer }[];
  db.close();
  await live.end();
  expect(rows.map((r) => [r.path, r.error_kind, r.body.toString()])).toEqual([
    ['/first-plain', null, 'one'],
    ['/gzipped', null, 'two'],
    ['/after-gzip', null, 'three'],
    ['/broken-gzip', 'decode_error', 'not gzip at all'],
    ['/last', null, 'four'],
  ]);
  expect(recorder.failures).toBe(0);
});

function modelExchange(path: string, requestBody: Buffer, responseBody: Buffer): Exchange {
  const ex = exchange(path, responseBody);
  return {
    ...ex,
    method: 'POST',
    requestHeaders: { host: 'api.example', 'content-type': 'application/json' },
    requestBody: { bytes: requestBody, total: requestBody.length, truncated: false },
    responseHeaders: { 'content-type': 'application/json' },
  };
}

it('writes the exchange row and its bodies first: a parser that fails costs only its derived rows, named on the row', async () => {
  const live = await liveSession(home);
  const recorder = new SessionRecorder(live.writer, 1 << 20);
  // Nested past what JSON.stringify can recurse through: the request view's parser throws on it.
  const deep = Buffer.from(`{"model":"claude-x","messages":[{"role":"user","content":${'['.repeat(200_000)}${']'.repeat(200_000)}}]}`);
  // Read now: the recorder hands the body's memory over to the writer thread.
  const deepBytes = deep.length;
  await recorder.record(modelExchange('/v1/messages', deep, Buffer.from('{"content":[]}')));
  await recorder.record(
    modelExchange('/v1beta/models/%E0%A4%A:generateContent', Buffer.from('{"contents":[]}'), Buffer.from('{"candidates":[]}')),
  );
  await live.writer.flush();
  const db = new Database(sessionPaths(home, live.id).dbPath, { readonly: true });
  const net = db
    .prepare(
      "SELECT n.path, n.parse_error, length(b.body) AS body FROM net_events n LEFT JOIN event_body_blobs b ON b.event_id = n.event_id AND b.direction = 'request' ORDER BY n.seq",
    )
    .all();
  const calls = db.prepare('SELECT provider, path FROM model_calls').all();
  db.close();
  await live.end();
  expect(net).toEqual([
    {
      path: '/v1/messages',
      parse_error: expect.stringMatching(/recording this exchange's model-calls rows failed: Maximum call stack size exceeded/),
      body: deepBytes,
    },
    { path: '/v1beta/models/%E0%A4%A:generateContent', parse_error: null, body: 15 },
  ]);
  expect(calls).toEqual([{ provider: 'google', path: '/v1beta/models/%E0%A4%A:generateContent' }]);
  expect(recorder.failures).toBe(0);
});

it('records one row per exchange whatever its path and bodies hold (property)', async () => {
  const live = await liveSession(home);
  const recorder = new SessionRecorder(live.writer, 1 << 20);
  const paths = fc.oneof(
    fc.constantFrom('/v1/messages', '/v1/chat/completions', '/v1/responses', '/api/chat', '/mcp'),
    fc.string().map((s) => `/v1beta/models/${s}:generateContent`),
    fc.string(),
  );
  const bodies = fc.oneof(
    fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
    fc.json().map((j) => Buffer.from(j)),
    fc.jsonValue().map((v) => Buffer.from(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: v }], tools: v, contents: v }))),
  );
  let recorded = 0;
  await fc.assert(
    fc.asyncProperty(paths, bodies, bodies, async (path, request, response) => {
      await recorder.record(modelExchange(path, request, response));
      recorded += 1;
    }),
    { numRuns: 150 },
  );
  await live.writer.flush();
  const db = new Database(sessionPaths(home, live.id).dbPath, { readonly: true });
  const { n } = db.prepare('SELECT count(*) AS n FROM net_events').get() as { n: number };
  db.close();
  await live.end();
  expect(n).toBe(recorded);
  expect(recorder.failures).toBe(0);
});
