// GET /v1/usage: windowed usage for charting, in the shape Cortex clients read (agentop's usage
// pane and spend band). Pure: a query string and usage records in, a snapshot out, so the whole
// answer is tested without a socket. Where the records come from is sessions/usageRecords.ts.
//
// Every error message here is a fixed string: the route is unauthenticated, and reflecting query
// bytes into an answer is how a reflected-content hole starts.

import type { UsageRecord } from '../sessions/usageRecords.ts';

export const BUCKET_MS = 60_000;
/** The longest duration window, as Cortex's ring holds; longer spans are the symbolic windows. */
export const MAX_WINDOW_MS = 6 * 3_600_000;
const DEFAULT_WINDOW_MS = 10 * BUCKET_MS;
export const MAX_SESSION_ID_LENGTH = 128;

export const USAGE_GROUPS = ['none', 'model', 'method', 'endpoint', 'session', 'agent', 'status', 'host'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

/** A duration window is served as per-minute buckets folded to the resolution; a symbolic one as one bucket. */
export type UsageWindow =
  | { readonly kind: 'duration'; readonly label: string; readonly ms: number }
  | { readonly kind: 'symbolic'; readonly label: 'today' | '7d' | 'month'; readonly from: number };

export interface UsageQuery {
  readonly window: UsageWindow;
  readonly resolutionMs: number;
  readonly group: UsageGroup;
  readonly session?: string;
}

export class UsageQueryError extends Error {
  override name = 'UsageQueryError';
}

export interface UsageCounts {
  requests: number;
  errors?: number;
  tokens?: number;
  costMicros?: number;
  pricedRequests?: number;
  priceableRequests?: number;
}

export interface UsageBucket extends UsageCounts {
  at: string;
  latMeanMs?: number;
  latStdDevMs?: number;
  latSamples?: number;
  series?: Record<string, UsageCounts>;
}

export interface UsageSnapshot {
  window: string;
  bucketSeconds: number;
  session?: string;
  group: UsageGroup;
  buckets: UsageBucket[];
  totals: UsageCounts;
  priced: boolean;
  unpricedBy?: Record<string, number>;
}

const DURATION = /^(?:\d+(?:\.\d+)?(?:h|m|s|ms))+$/;
const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };

/** A Go-style duration (`90m`, `1h30m`, `6h`) in milliseconds, as Cortex clients spell windows; null when it is not one. */
export function parseDuration(text: string): number | null {
  if (!DURATION.test(text)) return null;
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) ms += Number(amount) * UNIT_MS[unit!]!;
  return ms;
}

/** A duration in the short form a client can parse back: `10m`, `1h30m`, `6h`. */
export function durationLabel(ms: number): string {
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.round((ms % 60_000) / 1_000);
  const label = `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s ? `${s}s` : ''}`;
  return label || '0s';
}

function startOfLocalDay(now: Date): number {
  return new Date(now.getFullYear(), now.getMonth(), now.getDate()).getTime();
}

function parseWindow(value: string | null, now: Date): UsageWindow {
  // Local, not UTC: a day that reset mid-afternoon would be a different number from "today".
  if (value === 'today') return { kind: 'symbolic', label: 'today', from: startOfLocalDay(now) };
  if (value === '7d') return { kind: 'symbolic', label: '7d', from: now.getTime() - 7 * 86_400_000 };
  if (value === 'month') return { kind: 'symbolic', label: 'month', from: new Date(now.getFullYear(), now.getMonth(), 1).getTime() };
  if (value === null || value === '') return { kind: 'duration', label: durationLabel(DEFAULT_WINDOW_MS), ms: DEFAULT_WINDOW_MS };
  const ms = parseDuration(value);
  if (ms === null) throw new UsageQueryError('bad window (want a duration such as 10m, 1h or 6h, or today, 7d or month)');
  if (ms < BUCKET_MS) throw new UsageQueryError('window is shorter than the 1m bucket width');
  if (ms > MAX_WINDOW_MS)
    throw new UsageQueryError('window exceeds 6h, the longest duration window; ask for today, 7d or month for longer spans');
  if (ms % BUCKET_MS !== 0) throw new UsageQueryError('window is not a whole number of minutes');
  return { kind: 'duration', label: durationLabel(ms), ms };
}

function parseResolution(value: string | null, window: UsageWindow): number {
  if (value === null || value === '') return BUCKET_MS;
  const ms = parseDuration(value);
  if (ms === null) throw new UsageQueryError('bad resolution (want a duration such as 1m, 5m or 30m)');
  if (ms < BUCKET_MS) throw new UsageQueryError('resolution is finer than the 1m storage bucket');
  if (ms % BUCKET_MS !== 0) throw new UsageQueryError('resolution is not a whole number of minutes');
  // A symbolic window is one bucket spanning it: the resolution is never read there.
  if (window.kind === 'symbolic') return ms;
  if (ms > window.ms) throw new UsageQueryError('resolution exceeds the window');
  if (window.ms % ms !== 0) throw new UsageQueryError('resolution does not divide the window evenly (1m always does)');
  return ms;
}

function parseGroup(value: string | null): UsageGroup {
  if (value === null || value === '') return 'none';
  const group = USAGE_GROUPS.find((g) => g === value);
  if (!group)
    throw new UsageQueryError(
      'unknown group (want none, model, endpoint, session, agent, status or host; method is accepted as an alias for model)',
    );
  return group;
}

/** The query of GET /v1/usage, checked; a UsageQueryError (a 400) names what is wrong without quoting it. */
export function parseUsageQuery(params: URLSearchParams, now: Date): UsageQuery {
  const window = parseWindow(params.get('window'), now);
  const resolutionMs = parseResolution(params.get('resolution'), window);
  const group = parseGroup(params.get('group'));
  const session = params.get('session') ?? '';
  if (session.length > MAX_SESSION_ID_LENGTH) throw new UsageQueryError('session id too long');
  // Cortex refuses this pair because its ledger holds no session ids; refusing it too keeps one
  // request meaning the same thing on both servers, so a client coded against either works here.
  if (session !== '' && window.kind === 'symbolic') {
    throw new UsageQueryError(
      'session= cannot be combined with a symbolic window (today, 7d, month); ask for a duration window such as 1h or 6h',
    );
  }
  return session === '' ? { window, resolutionMs, group } : { window, resolutionMs, group, session };
}

/** The earliest instant a record can have and still fall in the window, for the readers' WHERE clauses. */
export function windowStart(window: UsageWindow, now: Date): number {
  if (window.kind === 'symbolic') return window.from;
  const newest = Math.floor(now.getTime() / BUCKET_MS) * BUCKET_MS;
  return newest + BUCKET_MS - window.ms;
}

function labelOf(record: UsageRecord, group: UsageGroup): string | undefined {
  switch (group) {
    case 'none':
      return undefined;
    case 'model':
    case 'method':
      return record.model;
    case 'session':
      return record.session;
    default:
      return record[group];
  }
}

function addCounts(into: UsageCounts, r: UsageRecord): void {
  into.requests += r.requests;
  into.errors = (into.errors ?? 0) + r.errors;
  into.tokens = (into.tokens ?? 0) + r.tokens;
  into.costMicros = (into.costMicros ?? 0) + r.costMicros;
  into.pricedRequests = (into.pricedRequests ?? 0) + r.pricedRequests;
  into.priceableRequests = (into.priceableRequests ?? 0) + r.priceableRequests;
}

/** Zero is left out on the wire, as Cortex sends it: a client reads absence as none. */
function wireCounts(c: UsageCounts): UsageCounts {
  const out: UsageCounts = { requests: c.requests };
  for (const key of ['errors', 'tokens', 'costMicros', 'pricedRequests', 'priceableRequests'] as const) {
    if (c[key]) out[key] = c[key];
  }
  return out;
}

interface Accumulator {
  counts: UsageCounts;
  latSum: number;
  latSumSq: number;
  latN: number;
  series: Map<string, UsageCounts>;
}

const emptyAccumulator = (): Accumulator => ({ counts: { requests: 0 }, latSum: 0, latSumSq: 0, latN: 0, series: new Map() });

function wireBucket(at: number, acc: Accumulator): UsageBucket {
  const bucket: UsageBucket = { at: new Date(at).toISOString(), ...wireCounts(acc.counts) };
  if (acc.latN > 0) {
    const mean = acc.latSum / acc.latN;
    bucket.latMeanMs = mean;
    const variance = acc.latSumSq / acc.latN - mean * mean;
    if (variance > 0) bucket.latStdDevMs = Math.sqrt(variance);
    bucket.latSamples = acc.latN;
  }
  if (acc.series.size > 0) bucket.series = Object.fromEntries([...acc.series].map(([k, v]) => [k, wireCounts(v)]));
  return bucket;
}

/**
 * The usage snapshot for a query: buckets oldest first, every one present (an idle minute is a
 * zero bucket, not a gap), totals summed from the records themselves, and `priced` false when
 * nothing in the window had a price, so a client says "cost unavailable" rather than $0.00.
 */
export function usageSnapshot(records: Iterable<UsageRecord>, query: UsageQuery, now: Date): UsageSnapshot {
  const { window, group } = query;
  const start = windowStart(window, now);
  const end = window.kind === 'symbolic' ? now.getTime() + 1 : start + window.ms;
  const width = window.kind === 'symbolic' ? end - start : query.resolutionMs;
  const buckets = Array.from({ length: Math.max(1, Math.round((end - start) / width)) }, emptyAccumulator);
  const totals: UsageCounts = { requests: 0 };
  const unpriced = new Map<string, number>();
  for (const r of records) {
    if (r.at < start || r.at >= end) continue;
    if (query.session !== undefined && r.session !== query.session) continue;
    const acc = buckets[Math.min(buckets.length - 1, Math.floor((r.at - start) / width))]!;
    addCounts(acc.counts, r);
    addCounts(totals, r);
    if (r.durationMs !== undefined && r.durationMs > 0) {
      acc.latSum += r.durationMs;
      acc.latSumSq += r.durationMs * r.durationMs;
      acc.latN += 1;
    }
    const label = labelOf(r, group);
    if (label !== undefined) {
      const entry = acc.series.get(label) ?? { requests: 0 };
      addCounts(entry, r);
      acc.series.set(label, entry);
    }
    const gap = r.priceableRequests - r.pricedRequests;
    if (gap > 0 && r.model) {
      // Named, not just counted: "api.example.com some-model: 4" is the pricing entry to add.
      const key = `${r.endpoint ?? r.host ?? ''} ${r.model}`;
      unpriced.set(key, (unpriced.get(key) ?? 0) + gap);
    }
  }
  const snapshot: UsageSnapshot = {
    window: window.label,
    // A symbolic window's one bucket reports its real span, floored at a second so nothing divides by zero.
    bucketSeconds: Math.max(1, Math.floor(width / 1_000)),
    ...(query.session !== undefined ? { session: query.session } : {}),
    group,
    buckets: buckets.map((acc, i) => wireBucket(start + i * width, acc)),
    totals: wireCounts(totals),
    priced: (totals.pricedRequests ?? 0) > 0,
  };
  if (unpriced.size > 0) snapshot.unpricedBy = Object.fromEntries(unpriced);
  return snapshot;
}

export interface UsageAnswer {
  readonly status: number;
  readonly body: UsageSnapshot | { error: string };
}

/**
 * The whole route: 400 with a fixed reason for a bad parameter, 503 when the records cannot be
 * read (a partial answer would understate spend), else the snapshot. `read` gets the window's
 * start and the session asked for.
 */
export function answerUsage(
  params: URLSearchParams,
  now: Date,
  read: (since: number, session?: string) => Iterable<UsageRecord>,
): UsageAnswer {
  let query: UsageQuery;
  try {
    query = parseUsageQuery(params, now);
  } catch (err) {
    if (err instanceof UsageQueryError) return { status: 400, body: { error: err.message } };
    throw err;
  }
  let records: Iterable<UsageRecord>;
  try {
    records = read(windowStart(query.window, now), query.session);
  } catch {
    return { status: 503, body: { error: 'cost history unavailable' } };
  }
  return { status: 200, body: usageSnapshot(records, query, now) };
}
