import Database from 'better-sqlite3';
import { gzipSync } from 'node:zlib';
import { afterAll, expect, it } from 'vitest';
import { EMPTY_BODY, type Exchange } from '../../../electron/proxy/exchange.ts';
import { ExchangeRecorder } from '../../../electron/proxy/exchangeRecorder.ts';
import { sessionPaths } from '../../../electron/store/paths.ts';
import { liveSession } from '../../helpers/sessionFixture.ts';
import { tempHome } from '../../helpers/tempHome.ts';

const home = tempHome();
afterAll(() => home.remove());

function exchange(path: string, body: Buffer, contentEncoding?: string): Exchange {
  return {
    startedAt: new Date(), host: 'files.example', port: 443, scheme: 'https', kind: 'request', method: 'GET', path, query: null,
    requestHeaders: { host: 'files.example' }, responseHeaders: { 'content-type': 'text/plain', ...(contentEncoding ? { 'content-encoding': contentEncoding } : {}) },
    status: 200, requestBody: EMPTY_BODY, responseBody: { bytes: body, total: body.length, truncated: false }, durationMs: 1, ttfbMs: 1,
    decision: 'allowed', matchedRule: 'default.allow', processName: 'curl', pid: 1, error: null,
  };
}

it('records exchanges in the order they finished, whether or not their bodies needed decoding, and a broken body loses nothing else', async () => {
  const live = await liveSession(home);
  const recorder = new ExchangeRecorder(live.writer, 1 << 20);
  void recorder.record(exchange('/first-plain', Buffer.from('one')));
  void recorder.record(exchange('/gzipped', gzipSync('two'), 'gzip'));
  void recorder.record(exchange('/after-gzip', Buffer.from('three')));
  void recorder.record(exchange('/broken-gzip', Buffer.from('not gzip at all'), 'gzip'));
  await recorder.record(exchange('/last', Buffer.from('four')));
  await live.writer.flush();
  const db = new Database(sessionPaths(home, live.id).dbPath, { readonly: true });
  const rows = db.prepare("SELECT n.path, n.error_kind, b.body FROM net_events n LEFT JOIN event_body_blobs b ON b.event_id = n.event_id AND b.direction = 'response' ORDER BY n.seq").all() as { path: string; error_kind: string | null; body: Buffer }[];
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
