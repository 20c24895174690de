import type { IncomingHttpHeaders } from 'node:http';

// What of a message's head crosses the proxy: end-to-end headers only, in both directions.

// `expect` too: Node's server has already answered 100-continue, and the upstream client refuses it.
// `host`: the Host sent upstream is always the checked destination's own. These are also every
// header HTTP/2 forbids (RFC 9113 section 8.2.2), so a response relayed to an HTTP/2 client is valid.
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
  'expect',
  'host',
]);

/** End-to-end headers only; a request's Host becomes the checked destination's own (`authority`). */
export function forwardHeaders(headers: IncomingHttpHeaders, authority?: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = authority === undefined ? {} : { host: authority };
  const connectionTokens = String(headers.connection ?? '')
    .toLowerCase()
    .split(',')
    .map((t) => t.trim());
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const key = name.toLowerCase();
    if (HOP_BY_HOP.has(key) || connectionTokens.includes(key)) continue;
    out[name] = value;
  }
  return out;
}

/** Whether an HTTP/1.1 request declares a body (RFC 9112 section 6.3): chunked, or a length above 0. */
export function declaresBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

/** A header's value as one string: repeats joined as HTTP joins them. */
export function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}
