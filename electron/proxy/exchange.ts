import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { CredentialUse } from '../credentials/credentialBroker.ts';

// One HTTP exchange as the proxy saw it, handed to the recorder when it ends: what was asked,
// what came back, the bytes in both directions (capped), timing, the policy decision and any
// failure. Bodies are kept as they crossed the wire; the recorder decodes them.

export const DEFAULT_BODY_CAP = 10 << 20;

export interface CapturedBody {
  /** The first `cap` bytes as they crossed the wire. */
  readonly bytes: Buffer;
  /** Every byte that crossed, kept or not. */
  readonly total: number;
  readonly truncated: boolean;
}

export interface ExchangeError {
  readonly kind: string;
  readonly message: string;
}

export interface Exchange {
  readonly startedAt: Date;
  readonly host: string;
  readonly port: number;
  readonly scheme: 'https' | 'http';
  readonly kind: 'request' | 'websocket' | 'malformed';
  readonly method: string;
  readonly path: string;
  readonly query: string | null;
  readonly requestHeaders: IncomingHttpHeaders;
  readonly responseHeaders: IncomingHttpHeaders | OutgoingHttpHeaders | null;
  readonly status: number | null;
  readonly requestBody: CapturedBody;
  readonly responseBody: CapturedBody;
  readonly durationMs: number;
  readonly ttfbMs: number | null;
  readonly decision: 'allowed' | 'denied';
  readonly matchedRule: string | null;
  readonly processName: string | null;
  readonly pid: number | null;
  readonly error: ExchangeError | null;
  /** An id taken for this exchange's row before it ended (its WebSocket frames already use it). */
  readonly eventId: string | null;
  /** A parser of the proxy's own that failed on this exchange (a WebSocket frame, for one). */
  readonly parseError: string | null;
  /** The session's stand-ins this request carried, and what the broker did with each. */
  readonly credentials?: readonly CredentialUse[];
}

/**
 * Collects a stream's bytes up to a cap while counting all of them. Given the length the stream
 * declares (its Content-Length), the bytes are copied as they pass into one buffer of that size,
 * made at the first byte (a HEAD answer declares a length and sends nothing): kept as a list and
 * joined at the end, every chunk stayed alive until the exchange ended, and the proxy's garbage
 * collector carried them all. A stream that sends more than it declared goes on as a list.
 */
export class BodyTap {
  private readonly chunks: Buffer[] = [];
  /** The declared length's buffer, while the stream keeps to it. */
  private filled: Buffer | null = null;
  /** The bytes a declared length gives room for, up to the cap; 0 when none was declared or the stream sent more. */
  private declared: number;
  private kept = 0;
  total = 0;

  constructor(
    private readonly cap: number,
    declaredLength?: number | null,
  ) {
    this.declared = declaredLength && Number.isSafeInteger(declaredLength) && declaredLength > 0 ? Math.min(cap, declaredLength) : 0;
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.kept >= this.cap) return;
    const room = this.cap - this.kept;
    const piece = chunk.length <= room ? chunk : chunk.subarray(0, room);
    if (this.kept + piece.length <= this.declared) {
      this.filled ??= Buffer.allocUnsafe(this.declared);
      piece.copy(this.filled, this.kept);
    } else {
      if (this.filled) this.chunks.push(this.filled.subarray(0, this.kept));
      this.filled = null;
      this.declared = 0;
      this.chunks.push(piece);
    }
    this.kept += piece.length;
  }

  body(): CapturedBody {
    // A stream that ended short of its declared length leaves a view of what came; whoever needs it whole copies it out.
    const bytes = this.filled ? this.filled.subarray(0, this.kept) : Buffer.concat(this.chunks, this.kept);
    return { bytes, total: this.total, truncated: this.total > this.kept };
  }
}

/** A Content-Length header's value as a number, or null where there is none or it is not one. */
export function declaredLength(value: string | string[] | number | undefined): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return null;
  const n = typeof text === 'number' ? text : /^\d+$/.test(text.trim()) ? Number(text.trim()) : NaN;
  return Number.isSafeInteger(n) ? n : null;
}

export const EMPTY_BODY: CapturedBody = { bytes: Buffer.alloc(0), total: 0, truncated: false };

/** What an exchange knows when its request arrives. */
export type ExchangeRequest = Pick<
  Exchange,
  'startedAt' | 'host' | 'port' | 'scheme' | 'kind' | 'method' | 'path' | 'query' | 'requestHeaders'
>;
/** How it ended; what a site does not know stays unanswered (null or empty). */
export type ExchangeOutcome = Partial<Omit<Exchange, keyof ExchangeRequest | 'processName' | 'pid' | 'durationMs' | 'requestBody'>> &
  Pick<Exchange, 'decision'>;

/** Who a connection belongs to: the guest process a VM named, or the command capsem record runs. */
export interface ConnectionOrigin {
  readonly processName?: string;
  readonly pid?: number;
}

/** Hands an exchange to the recorder with the process it came from, found when the request arrived (the request may have let go of its socket by the end). */
export type RecordExchange = (
  request: ExchangeRequest,
  outcome: ExchangeOutcome,
  origin: ConnectionOrigin,
  durationMs?: number,
  requestBody?: CapturedBody,
) => void;

export const NO_CREDENTIALS: readonly CredentialUse[] = [];

/**
 * One exchange with its fields always in one order: built by object spreads, its shape varied with
 * each site's fields and every exchange took V8's slow copying path.
 */
export function exchangeOf(
  request: ExchangeRequest,
  outcome: ExchangeOutcome,
  origin: ConnectionOrigin,
  durationMs: number,
  requestBody: CapturedBody,
): Exchange {
  return {
    startedAt: request.startedAt,
    host: request.host,
    port: request.port,
    scheme: request.scheme,
    kind: request.kind,
    method: request.method,
    path: request.path,
    query: request.query,
    requestHeaders: request.requestHeaders,
    responseHeaders: outcome.responseHeaders ?? null,
    status: outcome.status ?? null,
    requestBody,
    responseBody: outcome.responseBody ?? EMPTY_BODY,
    durationMs,
    ttfbMs: outcome.ttfbMs ?? null,
    decision: outcome.decision,
    matchedRule: outcome.matchedRule ?? null,
    processName: origin.processName ?? null,
    pid: origin.pid ?? null,
    error: outcome.error ?? null,
    eventId: outcome.eventId ?? null,
    parseError: outcome.parseError ?? null,
    credentials: outcome.credentials ?? NO_CREDENTIALS,
  };
}

// Recorded verbatim: headers that say what a request is, never who sent it. Everything else is
// recorded as a hash, so a key or token never reaches the database but equal values still match.
const VERBATIM = new Set([
  'accept',
  'accept-encoding',
  'accept-language',
  'anthropic-beta',
  'anthropic-version',
  'cache-control',
  'connection',
  'content-encoding',
  'content-length',
  'content-type',
  'date',
  'host',
  'mcp-protocol-version',
  'openai-beta',
  'openai-organization',
  'openai-processing-ms',
  'request-id',
  'retry-after',
  'server',
  'transfer-encoding',
  'user-agent',
  'vary',
  'x-goog-api-client',
  'x-request-id',
  'x-stainless-arch',
  'x-stainless-lang',
  'x-stainless-os',
  'x-stainless-package-version',
  'x-stainless-retry-count',
  'x-stainless-runtime',
  'x-stainless-runtime-version',
  'x-stainless-timeout',
]);

/** Hashes of recent header values: a client sends the same key and cookies with every request. */
const recentHashes = new Map<string, string>();
const RECENT_HASHES = 1024;

function hashed(value: string): string {
  let hash = recentHashes.get(value);
  if (hash === undefined) {
    hash = `sha256:${createHash('sha256').update(value).digest('hex').slice(0, 16)}`;
    if (recentHashes.size >= RECENT_HASHES) recentHashes.clear();
    recentHashes.set(value, hash);
  }
  return hash;
}

/** Headers as the ledger keeps them: the allowlist verbatim, every other value hashed. */
export function recordedHeaders(headers: IncomingHttpHeaders | OutgoingHttpHeaders | null): Record<string, string> | null {
  if (!headers) return null;
  const out: Record<string, string> = {};
  for (const name in headers) {
    const raw = headers[name];
    if (raw === undefined) continue;
    const value = Array.isArray(raw) ? raw.join(', ') : String(raw);
    const key = name.toLowerCase();
    out[key] = VERBATIM.has(key) ? value : hashed(value);
  }
  return out;
}

/** Maps a failed upstream exchange to the API's error kinds; the message names the address, never the URL. */
export function upstreamError(err: NodeJS.ErrnoException, address: string): ExchangeError {
  const code = err.code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { kind: 'upstream_dns', message: `cannot resolve ${address}` };
  if (code === 'ECONNREFUSED') return { kind: 'upstream_refused', message: `${address} refused the connection` };
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT')
    return { kind: 'upstream_timeout', message: `${address} did not answer in time` };
  if (/CERT|TLS|SSL|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_SSL/.test(code) || /certificate|tls|ssl/i.test(err.message)) {
    return { kind: 'upstream_tls', message: `TLS with ${address} failed: ${code || err.message}` };
  }
  return { kind: 'upstream_error', message: `exchange with ${address} failed: ${code || err.message}` };
}
