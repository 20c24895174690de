import type { Exchange } from '../../electron/proxy/exchange.ts';

/** A model API call as the proxy hands it to the recorder once it has ended: a JSON POST, allowed, answered 200 with `response`. */
export function modelExchange(
  host: string,
  path: string,
  request: Buffer,
  response: Buffer,
  fields: Partial<Pick<Exchange, 'responseHeaders' | 'error'>> = {},
): Exchange {
  return {
    startedAt: new Date(),
    host,
    port: 443,
    scheme: 'https',
    kind: 'request',
    method: 'POST',
    path,
    query: null,
    requestHeaders: { host, 'content-type': 'application/json' },
    responseHeaders: { 'content-type': 'application/json' },
    status: 200,
    requestBody: { bytes: request, total: request.length, truncated: false },
    responseBody: { bytes: response, total: response.length, truncated: false },
    durationMs: 1,
    ttfbMs: 1,
    decision: 'allowed',
    matchedRule: 'default.allow',
    processName: 'agent',
    pid: 1,
    error: null,
    eventId: null,
    parseError: null,
    ...fields,
  };
}
