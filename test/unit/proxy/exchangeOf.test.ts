import { describe, expect, it } from 'vitest';
import { EMPTY_BODY, exchangeOf, NO_CREDENTIALS, type ExchangeRequest } from '../../../electron/proxy/exchange.ts';

// Every exchange the recorder gets has every field, whatever the site that ended it knew.

const request: ExchangeRequest = {
  startedAt: new Date(0),
  host: 'api.example.com',
  port: 443,
  scheme: 'https',
  kind: 'request',
  method: 'GET',
  path: '/v1',
  query: null,
  requestHeaders: { accept: '*/*' },
};

describe('exchangeOf', () => {
  it('fills what a refusal did not know with nulls and empty bodies, and names the process', () => {
    const body = { bytes: Buffer.from('x'), total: 1, truncated: false };
    const exchange = exchangeOf(
      request,
      { decision: 'denied', status: 403, matchedRule: 'deny-evil' },
      { processName: 'curl', pid: 4 },
      12,
      body,
    );
    expect(exchange).toEqual({
      ...request,
      responseHeaders: null,
      status: 403,
      requestBody: body,
      responseBody: EMPTY_BODY,
      durationMs: 12,
      ttfbMs: null,
      decision: 'denied',
      matchedRule: 'deny-evil',
      processName: 'curl',
      pid: 4,
      error: null,
      eventId: null,
      parseError: null,
      credentials: NO_CREDENTIALS,
    });
  });

  it('gives every exchange its fields in one order, whichever outcome fields were given', () => {
    const bare = exchangeOf(request, { decision: 'allowed' }, {}, 0, EMPTY_BODY);
    const full = exchangeOf(
      request,
      { decision: 'allowed', eventId: 'e1', ttfbMs: 3, error: { kind: 'x', message: 'y' }, credentials: [] },
      { pid: 1 },
      5,
      EMPTY_BODY,
    );
    expect(Object.keys(full)).toEqual(Object.keys(bare));
    expect(bare).toMatchObject({ processName: null, pid: null });
  });
});
