import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  answerUsage,
  parseDuration,
  parseUsageQuery,
  usageSnapshot,
  UsageQueryError,
  type UsageSnapshot,
} from '../../../electron/api/usage.ts';
import type { UsageRecord } from '../../../electron/sessions/usageRecords.ts';

// 12:34:30 local: the newest minute bucket starts at 12:34.
const NOW = new Date(2026, 9, 15, 12, 34, 30);
const MIN = 60_000;
const q = (query: string) => parseUsageQuery(new URLSearchParams(query), NOW);
const snap = (records: UsageRecord[], query = ''): UsageSnapshot => usageSnapshot(records, q(query), NOW);

function call(minutesAgo: number, extra: Partial<UsageRecord> = {}): UsageRecord {
  return {
    at: NOW.getTime() - minutesAgo * MIN,
    session: 's1',
    requests: 1,
    errors: 0,
    tokens: 100,
    costMicros: 2_000,
    pricedRequests: 1,
    priceableRequests: 1,
    durationMs: 400,
    model: 'claude-sonnet-4-5',
    endpoint: 'api.anthropic.com',
    host: 'api.anthropic.com',
    agent: 'claude',
    status: '200',
    ...extra,
  };
}

describe('GET /v1/usage parameters', () => {
  it('defaults to ten one-minute buckets, the newest holding now', () => {
    const s = snap([]);
    expect(s).toMatchObject({ window: '10m', bucketSeconds: 60, group: 'none', priced: false, totals: { requests: 0 } });
    expect(s.buckets).toHaveLength(10);
    expect(s.buckets.at(-1)!.at).toBe(new Date(2026, 9, 15, 12, 34).toISOString());
    expect(s.buckets[0]!.at).toBe(new Date(2026, 9, 15, 12, 25).toISOString());
    expect(s).not.toHaveProperty('session');
  });

  it('takes any whole-minute duration up to 6h, spelled as Go spells it, and folds to the resolution', () => {
    expect(snap([], 'window=1h30m&resolution=15m')).toMatchObject({ window: '1h30m', bucketSeconds: 900 });
    expect(snap([], 'window=1h30m&resolution=15m').buckets).toHaveLength(6);
    expect(snap([], 'window=6h').buckets).toHaveLength(360);
    expect(snap([], 'window=90m').window).toBe('1h30m');
    expect(snap([], 'window=120s').window).toBe('2m');
  });

  it('serves a symbolic window as one bucket spanning it, from local midnight, 7x24h back, or the month start', () => {
    const today = snap([], 'window=today&resolution=7m');
    expect(today.buckets).toHaveLength(1);
    expect(today.buckets[0]!.at).toBe(new Date(2026, 9, 15).toISOString());
    expect(today.bucketSeconds).toBe(12 * 3600 + 34 * 60 + 30);
    expect(snap([], 'window=7d')).toMatchObject({ window: '7d', bucketSeconds: 7 * 86_400 });
    expect(snap([], 'window=month').buckets[0]!.at).toBe(new Date(2026, 9, 1).toISOString());
  });

  it.each([
    ['window=abc', 'bad window'],
    ['window=-5m', 'bad window'],
    ['window=30s', 'shorter than the 1m bucket'],
    ['window=7h', 'exceeds 6h'],
    ['window=90s', 'not a whole number of minutes'],
    ['resolution=fast', 'bad resolution'],
    ['resolution=30s', 'finer than the 1m'],
    ['resolution=90s', 'not a whole number of minutes'],
    ['window=10m&resolution=20m', 'exceeds the window'],
    ['window=10m&resolution=3m', 'does not divide the window'],
    ['group=plugin', 'unknown group'],
    ['group=MODEL', 'unknown group'],
    [`session=${'x'.repeat(129)}`, 'session id too long'],
    ['window=today&session=s1', 'cannot be combined with a symbolic window'],
    ['window=7d&session=s1', 'cannot be combined'],
    ['window=month&session=s1', 'cannot be combined'],
  ])('refuses %s saying why', (query, reason) => {
    expect(() => q(query)).toThrow(UsageQueryError);
    expect(() => q(query)).toThrow(reason);
  });

  it('never quotes a refused parameter back', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('window', 'resolution', 'group', 'session'),
        fc.string({ minLength: 3, maxLength: 200 }),
        (name, value) => {
          const marker = `<${value}>`;
          const answer = answerUsage(new URLSearchParams({ [name]: marker }), NOW, () => []);
          if (answer.status !== 200) expect(JSON.stringify(answer.body)).not.toContain(JSON.stringify(marker).slice(1, -1));
          expect([200, 400]).toContain(answer.status);
        },
      ),
    );
  });

  it('reads durations as Go does, and nothing else', () => {
    expect(parseDuration('1h30m')).toBe(90 * MIN);
    expect(parseDuration('1.5h')).toBe(90 * MIN);
    expect(parseDuration('500ms')).toBe(500);
    for (const bad of ['', '10', 'm', '1d', '10 m', '+10m', '1h 30m']) expect(parseDuration(bad), bad).toBeNull();
  });
});

describe('GET /v1/usage snapshot', () => {
  it('puts each request in its minute and sums totals, leaving zero figures out', () => {
    const s = snap([call(0), call(0, { tokens: 50, costMicros: 1_000, durationMs: 800 }), call(3, { status: '500', errors: 1 })]);
    expect(s.totals).toEqual({ requests: 3, errors: 1, tokens: 250, costMicros: 5_000, pricedRequests: 3, priceableRequests: 3 });
    expect(s.priced).toBe(true);
    expect(s.buckets.at(-1)).toMatchObject({ requests: 2, tokens: 150, latMeanMs: 600, latStdDevMs: 200, latSamples: 2 });
    expect(s.buckets.at(-4)).toMatchObject({ requests: 1, errors: 1 });
    expect(s.buckets[0]).toEqual({ at: s.buckets[0]!.at, requests: 0 });
  });

  it('leaves out what falls outside the window', () => {
    expect(snap([call(10), call(-1)]).totals.requests).toBe(0);
    expect(snap([call(9)]).totals.requests).toBe(1);
  });

  it('says priced:false when nothing had a price, and names the unpriced endpoint and model', () => {
    const s = snap([
      call(1, { model: 'mystery-1', costMicros: 0, pricedRequests: 0 }),
      call(2, { model: 'mystery-1', costMicros: 0, pricedRequests: 0 }),
    ]);
    expect(s.priced).toBe(false);
    expect(s.totals).not.toHaveProperty('costMicros');
    expect(s.totals.priceableRequests).toBe(2);
    expect(s.unpricedBy).toEqual({ 'api.anthropic.com mystery-1': 2 });
  });

  it('breaks buckets down by the group asked for; traffic without that label stays in the totals only', () => {
    const plain = call(0, {
      model: undefined,
      endpoint: undefined,
      tokens: 0,
      costMicros: 0,
      pricedRequests: 0,
      priceableRequests: 0,
      host: 'example.com',
      agent: 'curl',
    });
    const records = [call(0), call(0, { model: 'gpt-5', session: 's2', status: '429', errors: 1 }), plain];
    const series = (group: string) => snap(records, `group=${group}`).buckets.at(-1)!.series;
    expect(series('model')).toEqual({
      'claude-sonnet-4-5': expect.objectContaining({ requests: 1 }),
      'gpt-5': expect.objectContaining({ requests: 1, errors: 1 }),
    });
    expect(snap(records, 'group=method').group).toBe('method');
    expect(series('method')).toEqual(series('model'));
    expect(Object.keys(series('endpoint')!)).toEqual(['api.anthropic.com']);
    expect(Object.keys(series('host')!).sort()).toEqual(['api.anthropic.com', 'example.com']);
    expect(Object.keys(series('session')!).sort()).toEqual(['s1', 's2']);
    expect(Object.keys(series('agent')!).sort()).toEqual(['claude', 'curl']);
    expect(Object.keys(series('status')!).sort()).toEqual(['200', '429']);
    expect(series('none')).toBeUndefined();
  });

  it('keeps to one session when asked, echoing it', () => {
    const s = snap([call(0), call(0, { session: 's2' })], 'session=s2');
    expect(s.session).toBe('s2');
    expect(s.totals.requests).toBe(1);
  });

  it('totals agree with the buckets at every resolution', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -5, max: 400 }), { maxLength: 60 }),
        fc.constantFrom('1m', '2m', '5m', '30m', '1h', '6h'),
        (ages, resolution) => {
          const s = snap(
            ages.map((a) => call(a)),
            `window=6h&resolution=${resolution}`,
          );
          expect(s.buckets.reduce((n, b) => n + b.requests, 0)).toBe(s.totals.requests);
          expect(s.totals.requests).toBe(ages.filter((a) => a >= 0 && a < 360).length);
        },
      ),
    );
  });
});

describe('answerUsage', () => {
  it('answers 503 with a fixed reason when the records cannot be read', () => {
    const answer = answerUsage(new URLSearchParams(), NOW, () => {
      throw new Error('SQLITE_CORRUPT: secret path /home/x');
    });
    expect(answer).toEqual({ status: 503, body: { error: 'cost history unavailable' } });
  });

  it('asks the reader for the window start and the session', () => {
    const asked: unknown[] = [];
    answerUsage(new URLSearchParams('window=5m&session=abc'), NOW, (since, session) => {
      asked.push(since, session);
      return [];
    });
    expect(asked).toEqual([new Date(2026, 9, 15, 12, 30).getTime(), 'abc']);
  });
});
