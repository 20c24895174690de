import { createServer, ServerResponse, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { createSecureContext, rootCertificates, TLSSocket, type TLSSocketOptions } from 'node:tls';
import { Duplex, PassThrough, type Writable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { STAND_IN_ELSEWHERE_RULE, type CredentialBroker, type CredentialUse, type OutgoingHeaders } from '../credentials/credentialBroker.ts';
import type { CertificateAuthority, CipherOrder } from './certificateAuthority.ts';
import { createEgress, EgressRefused } from './egress.ts';
import { BodyTap, DEFAULT_BODY_CAP, EMPTY_BODY, upstreamError, type CapturedBody, type Exchange, type ExchangeError } from './exchange.ts';
import { http1Headers, opensWithHttp2Preface, startHttp2Clients } from './http2Clients.ts';
import type { Decision, PolicyStore } from './policy.ts';
import { newProxyToken, proxyAuthorized, proxyUrl } from './proxyAuth.ts';
import { absoluteTarget, isRefusal, parseAuthority, tunnelledTarget, type Destination, type TunnelEnd } from './requestTarget.ts';
import { canonicalHost } from './addresses.ts';
import { createGuestDns, type GuestLookup } from './guestDns.ts';
import { StandInAddresses } from './standInAddresses.ts';
import type { ResolveMap } from './resolveMap.ts';
import { relayUpgrade, type FrameSink } from './upgradeRelay.ts';
import { headersFromRaw, originOf as originUrl, startUpstreamClient } from './upstreamClient.ts';

// The recording MITM proxy. Explicit proxy mode: absolute-form HTTP requests and CONNECT tunnels,
// whose TLS it terminates with a leaf from the local CA; connections handed over by a VM's net
// port enter the same path with the guest process attached. Requests are parsed strictly by
// Node's llhttp, checked (where they go, what Host they carry, the policy), sent through the one
// egress function (egress.ts) over TLS that verifies the real upstream, and streamed both ways: a
// chunk reaches the client as it arrives, while a capped copy goes to the recorder. A client that
// chooses HTTP/2 inside a tunnel is served by Node's http2 server (http2Clients.ts), whose requests
// take the same path. A VM's connections that ignored the proxy (redirected in the guest, with
// their original destination) are served as tunnels there, and its DNS lookups are answered
// here with stand-in addresses that bring those connections back to their names.

export interface ConnectionOrigin {
  readonly processName?: string;
  readonly pid?: number;
}

export interface ProxyOptions {
  readonly ca: CertificateAuthority;
  readonly policy: PolicyStore;
  readonly onExchange: (exchange: Exchange) => void;
  readonly frames?: FrameSink;
  readonly resolve?: ResolveMap;
  /** Extra PEM certificates trusted for upstream TLS, beside the system's. */
  readonly upstreamCa?: readonly string[];
  readonly bodyCap?: number;
  readonly port?: number;
  /** Idle time on an upstream exchange before it is abandoned. */
  readonly upstreamIdleMs?: number;
  /** Who a plain local connection belongs to (capsem record: the command it runs). */
  readonly defaultOrigin?: ConnectionOrigin;
  /** The credentials the loopback port asks for; a fresh one per proxy when not given. */
  readonly token?: string;
  /** Why the session cannot be recorded any more, or null: while it says why, every new request is refused (507), never forwarded unrecorded. */
  readonly refusal?: () => string | null;
  /** Each name the guest looked up, as the DNS answerer answered it. */
  readonly onLookup?: (lookup: GuestLookup) => void;
  /** The guest's DNS lookups are resolved through this instead of the system's resolver (tests). */
  readonly lookup?: (name: string) => Promise<string[]>;
  /** The session's credential broker: real keys for stand-ins on their providers' hosts, refusal elsewhere. */
  readonly credentials?: CredentialBroker;
}

interface Tunnel extends TunnelEnd {
  readonly origin: ConnectionOrigin;
}

/** Where a tunnel goes: a CONNECT's authority, or the destination of a transparent connection. */
interface TunnelTarget {
  readonly host: string;
  readonly port: number;
  /** Redirected in the guest rather than asked for: named by its TLS SNI, and read before it is served. */
  readonly transparent: boolean;
}

/** Where a guest connection redirected by the transparent path was going (agent's `dst`). */
export interface TransparentDestination {
  readonly address: string;
  readonly port: number;
}

export interface ProxyHandle {
  readonly port: number;
  /** The proxy URL with its credentials, as HTTPS_PROXY takes it. */
  readonly url: string;
  /** Requests and tunnels on the loopback port refused for lack of this session's credentials. */
  readonly unauthenticated: number;
  /**
   * Serves a connection that arrived another way (a VM's net port), tagged with its guest process.
   * TLS inside it is offered ciphers in `cipherOrder` (the guest's CPU decides which is fastest).
   * With a `destination` it is a transparent connection, served as a tunnel there (named by
   * the stand-in its address is, when it is one); without, it speaks explicit-proxy HTTP.
   */
  adopt(socket: Duplex, origin: ConnectionOrigin, cipherOrder?: CipherOrder, destination?: TransparentDestination): void;
  /** Answers the guest's DNS queries on one `dns` stream, recording each lookup (guestDns.ts). */
  answerLookups(stream: Duplex, origin: ConnectionOrigin, transport: 'udp' | 'tcp'): void;
  close(): Promise<void>;
}

const TLS_PORTS = new Set([443, 8443]);
/** How long a transparent connection may stay silent before it is taken for a protocol that is neither TLS nor HTTP. */
const SILENCE_MS = 10_000;
/**
 * Bytes a client connection buffers before the upstream is paused. Node's 16 KiB default is one
 * TLS record: every chunk would pause and resume the upstream socket, which more than halved a
 * large download.
 */
const STREAM_BUFFER = 256 << 10;
/**
 * Body pieces read from upstream in one turn of the event loop go to the client as one write, up to
 * this size: a piece per socket read (about 13 KiB) meant a TLS record, a chunk frame and a system
 * call each, on both sides.
 */
const COALESCE_BYTES = 64 << 10;
// `expect` too: Node's server has already answered 100-continue, and the upstream client refuses it.
// `host`: the Host sent upstream is always the checked destination's own. These are also every
// header HTTP/2 forbids (RFC 9113 section 8.2.2), so a response relayed to an HTTP/2 client is valid.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'http2-settings', 'expect', 'host']);

/** A request from node:http's server, or node:http2's in its compatibility API. */
type ClientRequest = IncomingMessage | Http2ServerRequest;
type ClientResponse = ServerResponse | Http2ServerResponse;

/** What an HTTP/2 request says elsewhere than an HTTP/1.1 request says it; HTTP/1.1 requests have none. */
interface Http2Facts {
  /** Its session: the key of the connection's tunnel (the request's socket is a stand-in object). */
  readonly connection: object;
  /** Its headers as HTTP/1.1 carries them (http1Headers). */
  readonly headers: IncomingHttpHeaders;
  readonly authority: string | undefined;
  /** Whether a body follows its headers: said by the stream, not by a header. */
  readonly hasBody: boolean;
}

/** What an exchange knows when its request arrives. */
type ExchangeRequest = Pick<Exchange, 'startedAt' | 'host' | 'port' | 'scheme' | 'kind' | 'method' | 'path' | 'query' | 'requestHeaders'>;
/** How it ended; what a site does not know stays unanswered (null or empty). */
type ExchangeOutcome = Partial<Omit<Exchange, keyof ExchangeRequest | 'processName' | 'pid' | 'durationMs' | 'requestBody'>> & Pick<Exchange, 'decision'>;

/**
 * One exchange with its fields always in one order. Built by object spreads, the shapes varied with
 * each site's fields and every exchange took V8's slow copying path: the largest piece of the
 * proxy's own JavaScript in a CPU profile under load (about 18 us a request there).
 */
function exchangeOf(request: ExchangeRequest, outcome: ExchangeOutcome, origin: ConnectionOrigin, durationMs: number, requestBody: CapturedBody): Exchange {
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

const NO_CREDENTIALS: readonly CredentialUse[] = [];

/** What a request is refused with while the session cannot be recorded. */
function unrecordableBody(reason: string): string {
  return `capsem: this session cannot be recorded: ${reason}; request refused\n`;
}

/** A request target's path and query, apart. */
function splitTarget(target: string): { path: string; query: string | null } {
  const q = target.indexOf('?');
  return q >= 0 ? { path: target.slice(0, q), query: target.slice(q + 1) } : { path: target, query: null };
}

/** End-to-end headers only; a request's Host becomes the checked destination's own (`authority`). */
function forwardHeaders(headers: IncomingHttpHeaders, authority?: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = authority === undefined ? {} : { host: authority };
  const connectionTokens = String(headers.connection ?? '').toLowerCase().split(',').map((t) => t.trim());
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const key = name.toLowerCase();
    if (HOP_BY_HOP.has(key) || connectionTokens.includes(key)) continue;
    out[name] = value;
  }
  return out;
}

/** An answer written straight onto a socket that Node's server has let go of (CONNECT, upgrades). */
function rawAnswer(socket: Duplex, status: number, reason: string, body: string, headers: Record<string, string> = {}): void {
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}connection: close\r\n\r\n${body}`);
}

/** HTTP/1.1 closes the connection after a refusal; HTTP/2 has no Connection header and ends the one stream. */
const CLOSES = { connection: 'close' };
const STATUS_TEXT: Readonly<Record<number, string>> = { 400: 'Bad Request', 403: 'Forbidden', 407: 'Proxy Authentication Required', 421: 'Misdirected Request', 502: 'Bad Gateway', 507: 'Insufficient Storage' };
const AUTH_CHALLENGE = { 'proxy-authenticate': 'Basic realm="capsem"' };
const AUTH_REFUSAL = 'capsem: this proxy serves its session\'s own processes only (they get its address with credentials in HTTPS_PROXY)\n';

/**
 * The tunnel's byte stream with the bytes already read put back in front. A TLSSocket built on a
 * net.Socket reads the kernel handle directly and would never see them, so the TLS layer gets a
 * plain Duplex instead.
 */
function withPrefix(socket: Duplex, prefix: Buffer): Duplex {
  const stream = new Duplex({
    highWaterMark: STREAM_BUFFER,
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _encoding, callback) {
      socket.write(chunk, callback);
    },
    final(callback) {
      socket.end();
      callback();
    },
    destroy(err, callback) {
      socket.destroy();
      callback(err);
    },
  });
  stream.push(prefix);
  socket.on('data', (chunk: Buffer) => {
    if (!stream.push(chunk)) socket.pause();
  });
  socket.on('end', () => stream.push(null));
  socket.on('close', () => stream.destroy());
  return stream;
}

/** The name a TLS client asked for (SNI), canonical; null when it sent none or an address. */
function sniName(tls: TLSSocket): string | null {
  const servername = (tls as TLSSocket & { servername?: string | false }).servername;
  const host = typeof servername === 'string' ? canonicalHost(servername) : null;
  return host?.kind === 'name' ? host.host : null;
}

/** Whether an HTTP/1.1 request declares a body (RFC 9112 section 6.3): chunked, or a length above 0. */
function declaresBody(headers: IncomingHttpHeaders): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0');
}

/** Why a connection's bytes are not an HTTP/1.1 request, for its record. */
function malformedReason(err: NodeJS.ErrnoException): string {
  if (err.code === 'HPE_PAUSED_H2_UPGRADE') return 'HTTP/2 where HTTP/1.1 was due: HTTP/2 is served inside a CONNECT tunnel, chosen by TLS (ALPN h2) or by its preface as the tunnel\'s first bytes';
  return `malformed request: ${err.code ?? err.message}`;
}

export async function startMitmProxy(options: ProxyOptions): Promise<ProxyHandle> {
  const bodyCap = options.bodyCap ?? DEFAULT_BODY_CAP;
  const idleMs = options.upstreamIdleMs ?? 300_000;
  const token = options.token ?? newProxyToken();
  const tunnels = new WeakMap<object, Tunnel>();
  const adopted = new WeakMap<object, { readonly origin: ConnectionOrigin; readonly cipherOrder: CipherOrder }>();
  /** Connections that need no credentials: a VM's, the inside of an authorised tunnel, a socket that authenticated once. */
  const trusted = new WeakSet<object>();
  let unauthenticated = 0;
  // Extra upstream CAs go in one secure context built once: built per connection from the whole
  // root list, or passed as `ca` (folded into node:https's pool key per request), it cost most of
  // the proxy's CPU.
  const upstreamContext = options.upstreamCa && options.upstreamCa.length > 0 ? createSecureContext({ ca: [...rootCertificates, ...options.upstreamCa] }) : undefined;
  const egress = createEgress({ policy: options.policy, resolve: options.resolve, secureContext: upstreamContext });
  const upstreamClient = startUpstreamClient({ egress, idleMs, policyGeneration: () => options.policy.generation });
  const standIns = new StandInAddresses();
  const guestDns = createGuestDns({ policy: options.policy, resolve: options.resolve, names: standIns, onLookup: (lookup) => options.onLookup?.(lookup), refusal: options.refusal, ...(options.lookup ? { lookup: options.lookup } : {}) });

  function originOf(socket: object): ConnectionOrigin {
    return tunnels.get(socket)?.origin ?? adopted.get(socket)?.origin ?? options.defaultOrigin ?? {};
  }

  /** Hands an exchange to the recorder with the process it came from, found when the request arrived (the request may have let go of its socket by the end). */
  function emit(request: ExchangeRequest, outcome: ExchangeOutcome, origin: ConnectionOrigin, durationMs = 0, requestBody = EMPTY_BODY): void {
    try {
      options.onExchange(exchangeOf(request, outcome, origin, durationMs, requestBody));
    } catch {
      // A recorder failure must never take the proxy down; the writer counts its own losses.
    }
  }

  /** Whether a request on this connection may use the proxy; one that may not has been counted. */
  function authorised(connection: object, headers: IncomingHttpHeaders): boolean {
    if (trusted.has(connection)) return true;
    if (!proxyAuthorized(headers['proxy-authorization'], token)) {
      unauthenticated += 1;
      return false;
    }
    trusted.add(connection);
    return true;
  }

  function refuse(res: ClientResponse, status: number, body: string, headers: Record<string, string> = {}): void {
    if (res.headersSent) return void res.destroy();
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), ...(res instanceof ServerResponse ? CLOSES : {}), ...headers });
    res.end(body);
  }

  type Admission =
    | { readonly admitted: true; readonly request: ExchangeRequest; readonly dest: Destination; readonly decision: Decision }
    | { readonly admitted: false; readonly request: ExchangeRequest; readonly status: number; readonly body: string; readonly outcome: ExchangeOutcome };

  /**
   * Where a request goes and whether it may: its destination (the tunnel's, or its absolute URL's,
   * which its Host, and HTTP/2's :authority, must repeat), then the policy on that destination. A
   * refusal is answered and recorded by the caller.
   */
  function admit(req: ClientRequest, kind: ExchangeRequest['kind'], connection: object, headers: IncomingHttpHeaders, authority?: string): Admission {
    const startedAt = new Date();
    const method = req.method ?? 'GET';
    const tunnel = tunnels.get(connection);
    const target = tunnel ? tunnelledTarget(tunnel, req.url ?? '', headers.host, authority) : absoluteTarget(req.url ?? '', headers.host);
    if (isRefusal(target)) {
      // The target as it came, for the record of what was refused.
      const { path, query } = splitTarget(req.url ?? '');
      const request: ExchangeRequest = { startedAt, host: target.host ?? '(unparsed)', port: target.port, scheme: tunnel?.tls === false ? 'http' : 'https', kind, method, path, query, requestHeaders: headers };
      const error: ExchangeError = { kind: target.status === 421 ? 'misdirected_request' : 'bad_request', message: target.message };
      return { admitted: false, request, status: target.status, body: `capsem: ${target.message}\n`, outcome: { decision: 'denied', status: target.status, matchedRule: 'proxy.bad-request', error } };
    }
    const { path, query } = splitTarget(target.path);
    const request: ExchangeRequest = { startedAt, host: target.host, port: target.port, scheme: target.scheme, kind, method, path, query, requestHeaders: headers };
    const decision = options.policy.decide(target.host, target.port, method);
    if (decision.action === 'deny') {
      const error = { kind: 'destination_denied', message: `blocked by ${decision.rule}` };
      return { admitted: false, request, status: 403, body: `capsem: ${target.host}:${target.port} is blocked by policy rule ${decision.rule}\n`, outcome: { decision: 'denied', status: 403, matchedRule: decision.rule, error } };
    }
    return { admitted: true, request, dest: target, decision };
  }

  /** The request as it goes upstream: with no broker, as it came. */
  function brokerRequest(dest: Destination, headers: OutgoingHeaders): { readonly headers: OutgoingHeaders; readonly path: string; readonly uses: readonly CredentialUse[]; readonly refusal: string | null } {
    return options.credentials?.request(dest.host, headers, dest.path) ?? { headers, path: dest.path, uses: NO_CREDENTIALS, refusal: null };
  }

  function credentialRefusal(message: string): ExchangeOutcome {
    return { decision: 'denied', status: 403, matchedRule: STAND_IN_ELSEWHERE_RULE, error: { kind: 'credential_refused', message } };
  }

  /** The record of a destination the egress function refused: denied, under the rule that refused it. */
  function refusedOutcome(err: EgressRefused): ExchangeOutcome {
    return { decision: 'denied', status: 403, matchedRule: err.rule, error: { kind: err.kind, message: err.message } };
  }

  /** One request, from either protocol's server: admitted, sent upstream, streamed back and recorded. */
  function handle(req: ClientRequest, res: ClientResponse, http2: Http2Facts | null): void {
    const connection = http2 ? http2.connection : req.socket;
    const headers = http2 ? http2.headers : req.headers;
    if (!authorised(connection, headers)) {
      req.resume();
      return refuse(res, 407, AUTH_REFUSAL, AUTH_CHALLENGE);
    }
    const unrecordable = options.refusal?.();
    if (unrecordable) {
      req.resume();
      return refuse(res, 507, unrecordableBody(unrecordable));
    }
    const t0 = performance.now();
    const requestTap = new BodyTap(bodyCap);
    const origin = originOf(connection);
    const admission = admit(req, 'request', connection, headers, http2?.authority);
    const uses: CredentialUse[] = [];
    const finish = (outcome: ExchangeOutcome): void => emit(admission.request, uses.length > 0 ? { ...outcome, credentials: uses } : outcome, origin, Math.round(performance.now() - t0), requestTap.body());
    if (!admission.admitted) {
      refuse(res, admission.status, admission.body);
      req.resume();
      return finish(admission.outcome);
    }
    const { dest, decision } = admission;
    const brokered = brokerRequest(dest, forwardHeaders(headers, dest.authority));
    uses.push(...brokered.uses);
    if (brokered.refusal) {
      refuse(res, 403, `capsem: ${brokered.refusal}\n`);
      req.resume();
      return finish(credentialRefusal(brokered.refusal));
    }
    const scanner = options.credentials?.bodyScanner(dest.host, bodyCap) ?? null;
    /** A stand-in found in the body on its way elsewhere: the rest of the body is held back and the request refused. */
    let leak: CredentialUse | null = null;

    // The exchange is recorded once, when the upstream side has settled: a client that hangs up
    // first only marks it, so a destination refused meanwhile is still recorded as refused.
    let settled = false;
    let clientGone = false;
    let ttfb: number | null = null;
    let responseTap: BodyTap | null = null;
    let responseHeaders: Record<string, string | string[]> | null = null;
    let abortUpstream: ((err?: Error) => void) | null = null;
    const settle = (outcome: Omit<ExchangeOutcome, 'decision' | 'matchedRule'> & Partial<Pick<ExchangeOutcome, 'decision' | 'matchedRule'>>): void => {
      if (settled) return;
      settled = true;
      finish({ decision: 'allowed', matchedRule: decision.rule, ...outcome });
    };
    const received = (): Pick<ExchangeOutcome, 'status' | 'responseHeaders' | 'responseBody' | 'ttfbMs'> => ({
      status: responseHeaders ? res.statusCode : null, responseHeaders, responseBody: responseTap?.body() ?? EMPTY_BODY, ttfbMs: ttfb,
    });
    const fail = (err: NodeJS.ErrnoException): void => {
      if (settled) return;
      if (leak) {
        const message = options.credentials!.refusal(leak);
        if (!clientGone) refuse(res, 403, `capsem: ${message}\n`);
        return settle(credentialRefusal(message));
      }
      if (err instanceof EgressRefused) {
        if (!clientGone) refuse(res, 403, `capsem: ${err.message}\n`);
        return settle(refusedOutcome(err));
      }
      if (clientGone) return settle({ ...received(), error: { kind: 'client_canceled', message: 'the client closed the connection before the response ended' } });
      const error: ExchangeError = upstreamError(err, `${dest.host}:${dest.port}`);
      if (res.headersSent) {
        // The status is already on the wire: abort rather than end, so the client cannot take a
        // cut stream for a complete one.
        res.destroy();
        return settle({ ...received(), error });
      }
      refuse(res, 502, `capsem: ${error.message}\n`);
      settle({ status: 502, error });
    };
    // Held (corked) until the end of this event-loop turn, so a turn's body pieces go out as one write.
    let corked = false;
    const release = (): void => {
      if (!corked) return;
      corked = false;
      res.socket?.uncork();
    };
    // Either protocol's response is a Writable, written to as one.
    const sink: Writable = res;
    const handler: Dispatcher.DispatchHandlers = {
      onConnect: (abort) => {
        abortUpstream = abort;
        if (clientGone) abort(new Error('client closed'));
      },
      onError: fail,
      onHeaders: (status, raw, resume, statusText) => {
        if (status < 200) return true;
        ttfb = Math.round(performance.now() - t0);
        responseTap = new BodyTap(bodyCap);
        responseHeaders = headersFromRaw(raw);
        const head = forwardHeaders(responseHeaders);
        if (res instanceof ServerResponse) {
          res.writeHead(status, statusText, head);
          // A stream (no length) may hold its first byte back for long: send the head at once. A
          // sized body goes out with its head in one write.
          if (responseHeaders['content-length'] === undefined) res.flushHeaders();
        } else {
          // HTTP/2 has no reason phrase (Node warns when given one), and sends its head at once.
          res.writeHead(status, head);
        }
        res.on('drain', resume);
        return true;
      },
      onData: (chunk) => {
        responseTap!.push(chunk);
        // An HTTP/2 response shares its connection with others: only HTTP/1.1's is corked.
        if (!corked && http2 === null && res.socket) {
          corked = true;
          res.socket.cork();
          setImmediate(release);
        }
        if (!sink.write(chunk)) {
          release();
          return false;
        }
        if (corked && (res.socket?.writableLength ?? 0) >= COALESCE_BYTES) release();
        return true;
      },
      onComplete: () => {
        if (settled) return;
        // Ended while still corked, the end (an empty write, or the last chunk marker) joins the
        // body's write: released first, it cost a write system call of its own, one in three.
        res.end();
        release();
        settle(received());
      },
    };
    const clientLeft = (): void => {
      if (settled || res.writableFinished || clientGone) return;
      clientGone = true;
      abortUpstream?.(new Error('client closed'));
    };
    res.on('close', clientLeft);
    // The upstream client reads (and at the end destroys) a stream of its own, never the request
    // itself; the tap reads beside it.
    const body = (http2 ? http2.hasBody : declaresBody(headers)) ? new PassThrough({ highWaterMark: STREAM_BUFFER }) : null;
    if (body) {
      req.on('data', (chunk: Buffer) => requestTap.push(chunk));
      req.on('aborted', () => {
        clientLeft();
        body.destroy(new Error('the client aborted the request body'));
      });
      if (scanner) {
        req.on('data', (chunk: Buffer) => {
          if (leak) return;
          const use = scanner.push(chunk);
          if (use) uses.push(use);
          if (use?.outcome === 'refused') {
            leak = use;
            return void body.destroy(new Error('the request body carries a stand-in for a provider key'));
          }
          if (!body.write(chunk)) {
            req.pause();
            body.once('drain', () => req.resume());
          }
        });
        req.on('end', () => leak || body.end());
      } else req.pipe(body);
    } else req.resume();
    try {
      upstreamClient.dispatch(decision.explicit, {
        origin: originUrl(dest.scheme, dest.host, dest.port),
        path: brokered.path,
        method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
        headers: brokered.headers,
        body,
      }, handler);
    } catch (err) {
      fail(err as NodeJS.ErrnoException);
    }
  }

  function handleUpgrade(req: IncomingMessage, client: Duplex, head: Buffer): void {
    client.on('error', () => client.destroy());
    if (!authorised(req.socket, req.headers)) return rawAnswer(client, 407, STATUS_TEXT[407]!, AUTH_REFUSAL, AUTH_CHALLENGE);
    const unrecordable = options.refusal?.();
    if (unrecordable) return rawAnswer(client, 507, STATUS_TEXT[507]!, unrecordableBody(unrecordable));
    const t0 = performance.now();
    const origin = originOf(req.socket);
    const admission = admit(req, String(req.headers.upgrade ?? '').toLowerCase() === 'websocket' ? 'websocket' : 'request', req.socket, req.headers);
    let uses: readonly CredentialUse[] = NO_CREDENTIALS;
    const record = (outcome: ExchangeOutcome, requestBody?: CapturedBody): void => emit(admission.request, { ...outcome, credentials: uses }, origin, Math.round(performance.now() - t0), requestBody);
    if (!admission.admitted) {
      rawAnswer(client, admission.status, STATUS_TEXT[admission.status] ?? 'Refused', admission.body);
      return record(admission.outcome);
    }
    const { dest, decision } = admission;
    const brokered = brokerRequest(dest, req.headers as OutgoingHeaders);
    uses = brokered.uses;
    if (brokered.refusal) {
      rawAnswer(client, 403, STATUS_TEXT[403]!, `capsem: ${brokered.refusal}\n`);
      return record(credentialRefusal(brokered.refusal));
    }
    if (declaresBody(req.headers)) {
      const message = 'an upgrade request with a body is not supported';
      rawAnswer(client, 400, STATUS_TEXT[400]!, `capsem: ${message}\n`);
      return record({ decision: 'denied', status: 400, matchedRule: 'proxy.bad-request', error: { kind: 'bad_request', message } });
    }
    relayUpgrade(egress, { bodyCap, frames: options.frames }, { req, client, head, dest: { ...dest, path: brokered.path }, headers: brokered.headers, explicit: decision.explicit, t0, idleMs }).then(
      (outcome) => {
        const request = outcome.websocket && outcome.status === 101 ? admission.request : { ...admission.request, kind: 'request' as const };
        emit(request, { ...outcome, decision: 'allowed', matchedRule: decision.rule, credentials: uses }, origin, Math.round(performance.now() - t0), outcome.requestBody);
      },
      (err: NodeJS.ErrnoException) => {
        if (err instanceof EgressRefused) {
          rawAnswer(client, 403, STATUS_TEXT[403]!, `capsem: ${err.message}\n`);
          return record(refusedOutcome(err));
        }
        const error = upstreamError(err, `${dest.host}:${dest.port}`);
        rawAnswer(client, 502, STATUS_TEXT[502]!, `capsem: ${error.message}\n`);
        record({ decision: 'allowed', status: 502, matchedRule: decision.rule, error });
      },
    );
  }

  function serveRequest(req: ClientRequest, res: ClientResponse, http2: Http2Facts | null): void {
    try {
      handle(req, res, http2);
    } catch (err) {
      // A bug of ours must cost one request, never the proxy.
      refuse(res, 500, `capsem: the proxy failed on this request: ${(err as Error).message}\n`);
    }
  }

  const mitm: Server = createServer({ highWaterMark: STREAM_BUFFER, requestTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: 30_000 }, (req, res) => serveRequest(req, res, null));
  const http2Clients = startHttp2Clients((req, res) => {
    const { stream } = req;
    serveRequest(req, res, { connection: stream.session ?? stream, headers: http1Headers(req.headers), authority: req.headers[':authority'], hasBody: !stream.endAfterHeaders });
  });
  mitm.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    try {
      handleUpgrade(req, client, head);
    } catch {
      client.destroy();
    }
  });
  mitm.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    socket.end('HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: 30\r\n\r\ncapsem: malformed HTTP request');
    const tunnel = tunnels.get(socket);
    emit(
      { startedAt: new Date(), host: tunnel?.host ?? '(unparsed)', port: tunnel?.port ?? 0, scheme: tunnel?.tls === false ? 'http' : 'https', kind: 'malformed', method: '(unparsed)', path: '', query: null, requestHeaders: {} },
      { status: 400, decision: 'denied', matchedRule: 'proxy.malformed-request', error: { kind: 'bad_request', message: malformedReason(err) } },
      originOf(socket),
    );
  });

  /**
   * CONNECT: answer 200, then serve the tunnel. Policy is applied to each request inside, so a
   * refusal reaches the client as a readable 403 naming the rule rather than a failed tunnel.
   */
  function handleConnect(req: IncomingMessage, clientSocket: Duplex, head: Buffer): void {
    clientSocket.on('error', () => clientSocket.destroy());
    if (!authorised(req.socket, req.headers)) return rawAnswer(clientSocket, 407, STATUS_TEXT[407]!, AUTH_REFUSAL, AUTH_CHALLENGE);
    const unrecordable = options.refusal?.();
    if (unrecordable) return rawAnswer(clientSocket, 507, STATUS_TEXT[507]!, unrecordableBody(unrecordable));
    const authority = parseAuthority(req.url ?? '', 443);
    const origin = originOf(req.socket);
    const cipherOrder = adopted.get(req.socket)?.cipherOrder ?? 'aes-gcm-first';
    if (!authority) return rawAnswer(clientSocket, 400, STATUS_TEXT[400]!, 'capsem: CONNECT needs host:port\n');
    clientSocket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    enterTunnel(clientSocket, head, { ...authority, transparent: false }, origin, cipherOrder);
  }

  /** A transparent connection that carried neither TLS nor HTTP: refused, and recorded as such. */
  function refuseOpaque(target: TunnelTarget, origin: ConnectionOrigin, message: string): void {
    emit(
      { startedAt: new Date(), host: target.host, port: target.port, scheme: TLS_PORTS.has(target.port) ? 'https' : 'http', kind: 'malformed', method: '(none)', path: '', query: null, requestHeaders: {} },
      { decision: 'denied', matchedRule: 'proxy.not-http', error: { kind: 'bad_request', message } },
      origin,
    );
  }

  /**
   * The inside of a tunnel, whichever way it came: TLS terminated with a leaf for its name (or
   * plain HTTP read as it comes), then each request served by the HTTP/1.1 or HTTP/2 server and
   * held to the tunnel's destination. A transparent connection's name is its TLS SNI when it
   * sends one, else the name its address stands in for, else the address.
   */
  function enterTunnel(clientSocket: Duplex, head: Buffer, target: TunnelTarget, origin: ConnectionOrigin, cipherOrder: CipherOrder): void {
    const serve = (socket: Duplex, tls: TLSSocket | null, http2: boolean): void => {
      const tunnel: Tunnel = { host: tls && target.transparent ? (sniName(tls) ?? target.host) : target.host, port: target.port, tls: tls !== null, origin };
      if (http2) {
        const session = http2Clients.serve(socket);
        if (!session) return void socket.destroy();
        tunnels.set(session, tunnel);
        trusted.add(session);
        return;
      }
      tunnels.set(socket, tunnel);
      trusted.add(socket);
      mitm.emit('connection', socket);
    };
    const start = async (first: Buffer | null): Promise<void> => {
      if (first === null || first[0] === 0x16) {
        // The target's leaf is the default: a client dialling an IP address sends no SNI.
        const fallback = await options.ca.contextFor(target.host, cipherOrder);
        // With no byte read yet, TLS wraps the socket's own handle (the fast path); once a byte
        // has been read it must be put back in front, through a JavaScript stream.
        const transport = first === null ? (clientSocket as Socket) : (withPrefix(clientSocket, first) as Socket);
        // highWaterMark reaches net.Socket through TLSSocket's options; @types/node omits it.
        const tls = new TLSSocket(transport, {
          isServer: true,
          ...({ highWaterMark: STREAM_BUFFER } as TLSSocketOptions),
          secureContext: fallback,
          ALPNProtocols: ['h2', 'http/1.1'],
          SNICallback: (servername, cb) => {
            options.ca.contextFor(servername || target.host, cipherOrder).then((ctx) => cb(null, ctx), (err: Error) => cb(err));
          },
        });
        let secure = false;
        tls.on('error', (err: NodeJS.ErrnoException) => {
          // A CONNECT tunnel has its client's word for what it carries; a transparent one only its first byte.
          if (target.transparent && !secure) refuseOpaque(target, origin, `the TLS handshake failed: ${err.code ?? err.message}`);
          tls.destroy();
        });
        // Which server takes the connection is known once the handshake has chosen the protocol.
        tls.once('secure', () => {
          secure = true;
          serve(tls, tls, tls.alpnProtocol === 'h2');
        });
      } else serve(withPrefix(clientSocket, first), null, opensWithHttp2Preface(first));
    };
    const begin = (first: Buffer | null): void => {
      // Hold further bytes until the TLS layer is in place to read them.
      clientSocket.pause();
      start(first).catch(() => clientSocket.destroy());
    };
    // Inside a CONNECT to a TLS port nothing but TLS is spoken: wrap at once without reading a
    // byte. Elsewhere, and on every transparent connection, the first byte tells TLS from HTTP.
    if (head.length > 0) begin(head);
    else if (!target.transparent && TLS_PORTS.has(target.port)) begin(null);
    else if (!target.transparent) clientSocket.once('data', begin);
    else {
      // A protocol whose server speaks first (SSH, SMTP) would wait here for ever.
      const silence = setTimeout(() => {
        refuseOpaque(target, origin, `the client sent nothing within ${SILENCE_MS / 1000} s: only TLS and HTTP are carried (a protocol whose server speaks first is not)`);
        clientSocket.destroy();
      }, SILENCE_MS);
      clientSocket.once('close', () => clearTimeout(silence));
      clientSocket.once('data', (first: Buffer) => {
        clearTimeout(silence);
        begin(first);
      });
    }
  }

  mitm.on('connect', (req: IncomingMessage, clientSocket: Duplex, head: Buffer) => {
    try {
      handleConnect(req, clientSocket, head);
    } catch {
      clientSocket.destroy();
    }
  });
  const sockets = new Set<Duplex>();
  mitm.on('connection', (socket: Duplex) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    mitm.once('error', reject);
    mitm.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = mitm.address() as AddressInfo;
  return {
    port,
    url: proxyUrl(port, token),
    get unauthenticated() {
      return unauthenticated;
    },
    adopt(socket, origin, cipherOrder = 'aes-gcm-first', destination) {
      if (!destination) {
        adopted.set(socket, { origin, cipherOrder });
        trusted.add(socket);
        mitm.emit('connection', socket);
        return;
      }
      socket.on('error', () => socket.destroy());
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      const address = canonicalHost(destination.address);
      if (address?.kind !== 'address' || !Number.isInteger(destination.port) || destination.port < 1 || destination.port > 65535) return void socket.destroy();
      const host = standIns.nameAt(address.host) ?? address.host;
      try {
        enterTunnel(socket, Buffer.alloc(0), { host, port: destination.port, transparent: true }, origin, cipherOrder);
      } catch {
        socket.destroy();
      }
    },
    answerLookups(stream, origin, transport) {
      sockets.add(stream);
      stream.on('close', () => sockets.delete(stream));
      guestDns.serve(stream, origin, transport);
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await upstreamClient.close();
      await new Promise<void>((resolve) => mitm.close(() => resolve()));
    },
  };
}
