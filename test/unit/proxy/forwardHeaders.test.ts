import { describe, expect, it } from 'vitest';
import { declaresBody, forwardHeaders } from '../../../electron/proxy/forwardHeaders.ts';

// Only end-to-end headers cross the proxy, and a request's Host is always its checked destination's.

describe('forwarded headers', () => {
  it("drops hop-by-hop headers and those the Connection header names, and sets the destination's Host", () => {
    const out = forwardHeaders(
      {
        host: 'evil.example',
        connection: 'keep-alive, X-Trace',
        'x-trace': '1',
        'keep-alive': 'timeout=5',
        'proxy-authorization': 'Basic x',
        'transfer-encoding': 'chunked',
        upgrade: 'h2c',
        'http2-settings': 'AA',
        expect: '100-continue',
        te: 'trailers',
        accept: 'application/json',
        'set-cookie': ['a=1', 'b=2'],
      },
      'api.example.com',
    );
    expect(out).toEqual({ host: 'api.example.com', accept: 'application/json', 'set-cookie': ['a=1', 'b=2'] });
  });

  it('adds no Host to a response', () => {
    expect(forwardHeaders({ 'content-type': 'text/plain', host: 'x' })).toEqual({ 'content-type': 'text/plain' });
  });

  it('reads a body from a chunked encoding or a length above zero only', () => {
    expect(declaresBody({ 'transfer-encoding': 'chunked' })).toBe(true);
    expect(declaresBody({ 'content-length': '12' })).toBe(true);
    expect(declaresBody({ 'content-length': '0' })).toBe(false);
    expect(declaresBody({})).toBe(false);
  });
});
