import { describe, expect, it } from 'vitest';
import { harEntry, harUrl } from '../../../electron/archive/exportHar.ts';
import { parseAge } from '../../../electron/archive/vacuumSessions.ts';

const row = {
  seq: 7,
  event_id: 'a1b2c3d4e5f6',
  timestamp: '2026-03-01T10:00:00.000Z',
  domain: 'example.com',
  port: 8443,
  decision: 'allowed',
  method: 'PUT',
  path: '/upload',
  query: 'a=1&b=two%20words',
  status_code: 201,
  bytes_sent: 4,
  bytes_received: 3,
  duration_ms: 100,
  ttfb_ms: 30,
  matched_rule: 'allow',
  request_headers: '{"content-type":"application/octet-stream"}',
  response_headers: '{"content-type":"text/plain","location":"/next"}',
  conn_type: 'https',
  trace_id: null,
};

describe('HAR entries', () => {
  it('builds the URL from scheme, host, non-default port, path and query', () => {
    expect(harUrl(row)).toBe('https://example.com:8443/upload?a=1&b=two%20words');
    expect(harUrl({ ...row, port: 443, query: null })).toBe('https://example.com/upload');
    expect(harUrl({ ...row, conn_type: 'http', port: 80, path: 'x', query: null })).toBe('http://example.com/x');
  });

  it('keeps UTF-8 bodies as text and others as base64, with the spec fields filled', () => {
    const binary = new Uint8Array([0xff, 0x00, 0x8b, 0x1f]);
    const entry = harEntry(row, [
      { direction: 'request', content_type: null, original_bytes: 4, stored_bytes: 4, truncated: 0, body: binary },
      { direction: 'response', content_type: 'text/plain', original_bytes: 10, stored_bytes: 3, truncated: 1, body: Buffer.from('héy') },
    ]) as { request: Record<string, unknown>; response: Record<string, unknown>; timings: Record<string, number>; time: number };
    expect(entry.request.postData).toEqual({
      mimeType: 'application/octet-stream',
      text: Buffer.from(binary).toString('base64'),
      _encoding: 'base64',
    });
    expect(entry.request.queryString).toEqual([
      { name: 'a', value: '1' },
      { name: 'b', value: 'two words' },
    ]);
    expect(entry.response).toMatchObject({ status: 201, statusText: 'Created', redirectURL: '/next', bodySize: 3 });
    expect(entry.response.content).toMatchObject({
      size: 10,
      mimeType: 'text/plain',
      text: 'héy',
      comment: 'body truncated to 3 of 10 bytes',
    });
    expect(entry.timings).toMatchObject({ wait: 30, receive: 70, send: 0, dns: -1 });
    expect(entry.time).toBe(100);
  });
});

describe('vacuum ages', () => {
  it('reads days, hours, minutes and seconds', () => {
    expect(parseAge('30d')).toBe(30 * 86_400_000);
    expect(parseAge('12h')).toBe(12 * 3_600_000);
    expect(parseAge('90m')).toBe(90 * 60_000);
    expect(parseAge('45s')).toBe(45_000);
    expect(parseAge('2')).toBe(2 * 86_400_000);
    expect(() => parseAge('-1d')).toThrow(/not an age/);
    expect(() => parseAge('soon')).toThrow(/not an age/);
  });
});
