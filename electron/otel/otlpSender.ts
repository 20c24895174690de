import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';

// One OTLP/HTTP request (protobuf) and what its answer means for the body, as the OTLP
// specification says: 2xx taken (with the spans a partial success rejected), 429/502/503/504 and
// a network failure or timeout to be tried again (after Retry-After when the server says), any
// other status refused for good.

export const SEND_TIMEOUT_MS = 10_000;

export type SendOutcome =
  | { readonly kind: 'sent'; readonly rejected: number; readonly message: string | null }
  | { readonly kind: 'retry'; readonly reason: string; readonly afterMs: number | null }
  | { readonly kind: 'refused'; readonly reason: string };

const RETRYABLE = new Set([429, 502, 503, 504]);

/** The traces URL of an endpoint: a bare base gets the signal's path, as OTEL_EXPORTER_OTLP_ENDPOINT does. */
export function tracesUrl(endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new Error(`the OTLP endpoint "${endpoint}" is not a URL (for example http://localhost:4318)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`the OTLP endpoint "${endpoint}" is not http or https`);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/v1/traces';
  return url;
}

/** Retry-After as milliseconds: seconds, or an HTTP date; null when absent or unreadable. */
function retryAfter(value: string | null): number | null {
  if (value === null) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

export async function sendOtlp(
  url: URL,
  headers: Readonly<Record<string, string>>,
  body: Uint8Array,
  timeoutMs = SEND_TIMEOUT_MS,
): Promise<SendOutcome> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/x-protobuf' },
      // A copy on its own ArrayBuffer, as fetch takes it.
      body: new Uint8Array(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const reason = e.name === 'TimeoutError' ? `no answer in ${timeoutMs / 1000} s` : (e.cause?.code ?? e.cause?.message ?? e.message);
    return { kind: 'retry', reason: `${url.host}: ${reason}`, afterMs: null };
  }
  let answer: Uint8Array;
  try {
    answer = new Uint8Array(await response.arrayBuffer());
  } catch (err) {
    return { kind: 'retry', reason: `${url.host}: the answer broke off (${(err as Error).message})`, afterMs: null };
  }
  if (response.ok) {
    try {
      const partial = answer.length > 0 ? ProtobufTraceSerializer.deserializeResponse(answer).partialSuccess : undefined;
      return { kind: 'sent', rejected: Number(partial?.rejectedSpans ?? 0), message: partial?.errorMessage || null };
    } catch {
      // A collector that answers 2xx with something other than the response message took the spans.
      return { kind: 'sent', rejected: 0, message: null };
    }
  }
  const reason = `${url.host} answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
  if (RETRYABLE.has(response.status)) return { kind: 'retry', reason, afterMs: retryAfter(response.headers.get('retry-after')) };
  return { kind: 'refused', reason };
}
