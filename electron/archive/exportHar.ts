import type Database from 'better-sqlite3';
import { STATUS_CODES } from 'node:http';
import { capsemVersion } from '../platform/capsemVersion.ts';
import type { ChunkSink } from './chunkSink.ts';

// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/): one entry per net_events row, in seq
// order, with the full bodies from event_body_blobs. A body that is UTF-8 is text; anything else
// is base64, with `encoding` on the response (the spec's field) and `_encoding` on postData (the
// spec has none there; custom fields start with "_"). Fields the recorder does not keep (cookies,
// header sizes, the DNS/connect split) take the spec's "unknown" values: [] and -1.

interface NetRow {
  seq: number;
  event_id: string;
  timestamp: string;
  domain: string;
  port: number | null;
  decision: string;
  method: string | null;
  path: string | null;
  query: string | null;
  status_code: number | null;
  bytes_sent: number | null;
  bytes_received: number | null;
  duration_ms: number | null;
  ttfb_ms?: number | null;
  matched_rule: string | null;
  request_headers: string | null;
  response_headers: string | null;
  conn_type: string | null;
  trace_id: string | null;
  error_message?: string | null;
}

interface BlobRow {
  direction: 'request' | 'response';
  content_type: string | null;
  original_bytes: number;
  stored_bytes: number;
  truncated: number;
  body: Uint8Array | null;
}

interface HarHeader {
  name: string;
  value: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function bodyText(body: Uint8Array | null): { text: string; base64: boolean } {
  if (!body || body.byteLength === 0) return { text: '', base64: false };
  try {
    return { text: utf8.decode(body), base64: false };
  } catch {
    return { text: Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('base64'), base64: true };
  }
}

function headers(json: string | null): HarHeader[] {
  if (!json) return [];
  try {
    const parsed: unknown = JSON.parse(json);
    if (!parsed || typeof parsed !== 'object') return [];
    return Object.entries(parsed as Record<string, unknown>).flatMap(([name, value]) =>
      Array.isArray(value) ? value.map((v) => ({ name, value: String(v) })) : [{ name, value: String(value) }],
    );
  } catch {
    return [];
  }
}

function headerValue(list: readonly HarHeader[], name: string): string | undefined {
  return list.find((h) => h.name.toLowerCase() === name)?.value;
}

export function harUrl(row: Pick<NetRow, 'conn_type' | 'domain' | 'port' | 'path' | 'query'>): string {
  const scheme = row.conn_type === 'http' ? 'http' : 'https';
  const defaultPort = scheme === 'http' ? 80 : 443;
  const port = row.port !== null && row.port !== defaultPort ? `:${row.port}` : '';
  const path = row.path && row.path.startsWith('/') ? row.path : `/${row.path ?? ''}`;
  return `${scheme}://${row.domain}${port}${path}${row.query ? `?${row.query}` : ''}`;
}

function queryString(query: string | null): { name: string; value: string }[] {
  if (!query) return [];
  return [...new URLSearchParams(query)].map(([name, value]) => ({ name, value }));
}

export function harEntry(row: NetRow, blobs: readonly BlobRow[]): Record<string, unknown> {
  const requestHeaders = headers(row.request_headers);
  const responseHeaders = headers(row.response_headers);
  const request = blobs.find((b) => b.direction === 'request');
  const response = blobs.find((b) => b.direction === 'response');
  const duration = Math.max(0, row.duration_ms ?? 0);
  const wait = Math.min(duration, Math.max(0, row.ttfb_ms ?? duration));
  const status = row.status_code ?? 0;
  const req = request ? bodyText(request.body) : null;
  const res = response ? bodyText(response.body) : null;
  const responseMime = response?.content_type ?? headerValue(responseHeaders, 'content-type') ?? 'application/octet-stream';
  return {
    startedDateTime: row.timestamp,
    time: duration,
    request: {
      method: row.method ?? 'GET',
      url: harUrl(row),
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: requestHeaders,
      queryString: queryString(row.query),
      ...(req
        ? {
            postData: {
              mimeType: request!.content_type ?? headerValue(requestHeaders, 'content-type') ?? 'application/octet-stream',
              text: req.text,
              ...(req.base64 ? { _encoding: 'base64' } : {}),
            },
          }
        : {}),
      headersSize: -1,
      bodySize: request ? request.original_bytes : (row.bytes_sent ?? -1),
    },
    response: {
      status,
      statusText: STATUS_CODES[status] ?? '',
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: responseHeaders,
      content: {
        size: response ? response.original_bytes : (row.bytes_received ?? 0),
        mimeType: responseMime,
        ...(res ? { text: res.text, ...(res.base64 ? { encoding: 'base64' } : {}) } : {}),
        ...(response?.truncated ? { comment: `body truncated to ${response.stored_bytes} of ${response.original_bytes} bytes` } : {}),
      },
      redirectURL: headerValue(responseHeaders, 'location') ?? '',
      headersSize: -1,
      bodySize: response ? response.stored_bytes : (row.bytes_received ?? -1),
    },
    cache: {},
    timings: { blocked: -1, dns: -1, connect: -1, ssl: -1, send: 0, wait, receive: duration - wait },
    _capsem: {
      seq: row.seq,
      eventId: row.event_id,
      decision: row.decision,
      matchedRule: row.matched_rule,
      traceId: row.trace_id,
      error: row.error_message ?? null,
    },
  };
}

/** Streams the HAR document of one session.db into `sink`; returns the number of entries. */
export async function writeHar(
  db: Database.Database,
  sessionId: string,
  sink: ChunkSink,
  onProgress?: (done: number, total: number) => void,
): Promise<number> {
  const total = (db.prepare('SELECT count(*) AS n FROM net_events').get() as { n: number }).n;
  const blobs = db.prepare(
    "SELECT direction, content_type, original_bytes, stored_bytes, truncated, body FROM event_body_blobs WHERE event_id = ? AND source_table = 'net_events'",
  );
  const creator = { name: 'Capsem Desktop', version: capsemVersion() };
  await sink.write(
    `{"log":{"version":"1.2","creator":${JSON.stringify(creator)},"comment":${JSON.stringify(`session ${sessionId}`)},"entries":[\n`,
  );
  let count = 0;
  const order = db.prepare("SELECT 1 FROM pragma_table_info('net_events') WHERE name = 'seq'").get() ? 'seq' : 'id';
  for (const row of db.prepare(`SELECT * FROM net_events ORDER BY ${order}`).iterate() as IterableIterator<NetRow>) {
    const entry = harEntry({ ...row, seq: row.seq ?? count + 1 }, blobs.all(row.event_id) as BlobRow[]);
    await sink.write(`${count > 0 ? ',\n' : ''}${JSON.stringify(entry)}`);
    count += 1;
    if (count % 256 === 0) onProgress?.(count, total);
  }
  await sink.write('\n]}}\n');
  onProgress?.(count, total);
  return count;
}
