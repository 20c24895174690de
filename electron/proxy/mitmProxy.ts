import type { LookupAddress } from 'node:dns';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { request as httpRequest } from 'node:http';
import { isIP, type AddressInfo, type Socket } from 'node:net';
import { createSecureContext, rootCertificates, TLSSocket, type TLSSocketOptions } from 'node:tls';
import { Duplex, PassThrough } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { CertificateAuthority, CipherOrder } from './certificateAuthority.ts';
import { BodyTap, DEFAULT_BODY_CAP, EMPTY_BODY, upstreamError, type CapturedBody, type Exchange, type ExchangeError } from './exchange.ts';
import { PRIVATE_ADDRESS_RULE, type PolicyStore } from './policy.ts';
import type { ResolveMap } from './resolveMap.ts';
import { DestinationPrivate, headersFromRaw, originOf as originUrl, startUpstreamClient } from './upstreamClient.ts';

// The recording MITM proxy. Explicit proxy mode: absolute-form HTTP requests and CONNECT tunnels,
// whose TLS it terminates with a leaf from the local CA; connections handed over by a VM's net
// port enter the same path with the guest process attached. Requests are parsed strictly by
// Node's llhttp, forwarded over TLS that verifies the real upstream, and streamed both ways: a
// chunk reaches the client as it arrives, while a capped copy goes to the recorder.

export interface ConnectionOrigin {
  readonly processName?: string;
  readonly pid?: number;
}

export interface ProxyOptions {
  readonly ca: CertificateAuthority;
  readonly policy: PolicyStore;
  readonly onExchange: (exchange: Exchange) => void;
  readonly resolve?: ResolveMap;
  /** Extra PEM certificates trusted for upstream TLS, beside the system's. */
  readonly upstreamCa?: readonly string[];
  readonly bodyCap?: number;
  readonly port?: number;
  /** Idle time on an upstream exchange before it is abandoned. */
  readonly upstreamIdleMs?: number;
  /** Who a plain local connection belongs to (capsem record: the command it runs). */
  readonly defaultOrigin?: ConnectionOrigin;
  /** Why the session cannot be recorded any more, or null: while it says why, every new request is refused (507), never forwarded unrecorded. */
  readonly refusal?: () => string | null;
}

interface Tunnel {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  readonly origin: ConnectionOrigin;
}

export interface ProxyHandle {
  readonly port: number;
  readonly url: string;
  /**
   * Serves a connection that arrived another way (a VM's net port), tagged with its guest process.
   * TLS inside it is offered ciphers in `cipherOrder` (the guest's CPU decides which is fastest).
   */
  adopt(socket: Duplex, origin: ConnectionOrigin, cipherOrder?: CipherOrder): void;
  close(): Promise<void>;
}

const TLS_PORTS = new Set([443, 8443]);
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
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'expect']);

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
  };
}

/** What a request is refused with while the session cannot be recorded. */
function unrecordableBody(reason: string): string {
  return `capsem: this session cannot be recorded: ${reason}; request refused\n`;
}

/** The same as a raw 507, for a tunnel or an upgrade. */
function insufficientStorage(reason: string): string {
  const body = unrecordableBody(reason);
  return `HTTP/1.1 507 Insufficient Storage\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

/** A request target's path and query, apart. */
function splitTarget(target: string): { path: string; query: string | null } {
  const q = target.indexOf('?');
  return q >= 0 ? { path: target.slice(0, q), query: target.slice(q + 1) } : { path: target, query: null };
}

function forwardHeaders(headers: IncomingMessage['headers'], keepUpgrade = false): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const connectionTokens = String(headers.connection ?? '').toLowerCase().split(',').map((t) => t.trim());
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const key = name.toLowerCase();
    if (HOP_BY_HOP.has(key) && !(keepUpgrade && (key === 'upgrade' || key === 'connection'))) continue;
    if (!keepUpgrade && connectionTokens.includes(key)) continue;
    out[name] = value;
  }
  return out;
}

/** host and port of an authority ("example.com:443", "[::1]:8443"), or null when it is not one. */
export function parseAuthority(authority: string, defaultPort: number): { host: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(authority);
  if (!m) return null;
  const port = m[2] === undefined ? defaultPort : Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return { host: m[1]!.replace(/^\[|\]$/g, '').toLowerCase(), port };
}

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

export async function startMitmProxy(options: ProxyOptions): Promise<ProxyHandle> {
  const bodyCap = options.bodyCap ?? DEFAULT_BODY_CAP;
  const idleMs = options.upstreamIdleMs ?? 300_000;
  const tunnels = new WeakMap<object, Tunnel>();
  const adopted = new WeakMap<object, { readonly origin: ConnectionOrigin; readonly cipherOrder: CipherOrder }>();
  // Extra upstream CAs go in one secure context built once: built per connection from the whole
  // root list, or passed as `ca` (folded into node:https's pool key per request), it cost most of
  // the proxy's CPU.
  const upstreamContext = options.upstreamCa && options.upstreamCa.length > 0 ? createSecureContext({ ca: [...rootCertificates, ...options.upstreamCa] }) : undefined;
  const tlsTrust = upstreamContext ? { secureContext: upstreamContext } : {};
  const upstreamClient = startUpstreamClient({ resolve: options.resolve, secureContext: upstreamContext, idleMs, privateAddressesDenied: () => options.policy.policy.privateAddresses === 'deny' });

  /** The upstream client's address choice and policy check, as a node:net `lookup` (WebSocket upgrades). */
  function lookupFor(port: number, explicit: boolean) {
    return (hostname: string, opts: unknown, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void): void => {
      const all = typeof opts === 'object' && opts !== null && (opts as { all?: boolean }).all === true;
      upstreamClient.addressFor(hostname.replace(/^\[|\]$/g, ''), port, explicit).then(({ address }) => {
        const family = isIP(address);
        if (all) callback(null, [{ address, family }]);
        else callback(null, address, family);
      }, (err: NodeJS.ErrnoException) => callback(err, ''));
    };
  }

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

  function refuse(res: ServerResponse, status: number, body: string): void {
    if (res.headersSent) return void res.destroy();
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
    res.end(body);
  }

  function target(req: IncomingMessage): { scheme: 'https' | 'http'; host: string; port: number; path: string } | { error: number; message: string } {
    const tunnel = tunnels.get(req.socket);
    if (tunnel) {
      const named = parseAuthority(String(req.headers.host ?? ''), tunnel.tls ? 443 : 80);
      if (named && named.host !== tunnel.host) return { error: 421, message: `Host ${named.host} is not this tunnel's destination ${tunnel.host}` };
      return { scheme: tunnel.tls ? 'https' : 'http', host: tunnel.host, port: tunnel.port, path: req.url ?? '/' };
    }
    const raw = req.url ?? '';
    if (!/^https?:\/\//i.test(raw)) return { error: 400, message: 'this is a proxy: send absolute-form requests (http://host/path) or CONNECT' };
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return { error: 400, message: 'malformed request target' };
    }
    const scheme = url.protocol === 'https:' ? 'https' : 'http';
    return { scheme, host: url.hostname.replace(/^\[|\]$/g, '').toLowerCase(), port: Number(url.port) || (scheme === 'https' ? 443 : 80), path: `${url.pathname}${url.search}` };
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const unrecordable = options.refusal?.();
    if (unrecordable) {
      req.resume();
      return refuse(res, 507, unrecordableBody(unrecordable));
    }
    const startedAt = new Date();
    const t0 = performance.now();
    const dest = target(req);
    const requestTap = new BodyTap(bodyCap);
    const method = req.method ?? 'GET';
    const origin = originOf(req.socket);
    const { path, query } = splitTarget('path' in dest ? dest.path : (req.url ?? ''));
    const request: ExchangeRequest = {
      startedAt,
      host: 'host' in dest ? dest.host : String(req.headers.host ?? '(unknown)'),
      port: 'port' in dest ? dest.port : 0,
      scheme: 'scheme' in dest ? dest.scheme : ('https' as const),
      kind: 'request' as const,
      method,
      path,
      query,
      requestHeaders: req.headers,
    };
    const finish = (outcome: ExchangeOutcome): void => emit(request, outcome, origin, Math.round(performance.now() - t0), requestTap.body());

    if ('error' in dest) {
      refuse(res, dest.error, `${dest.message}\n`);
      req.resume();
      return finish({ decision: 'denied', status: dest.error, matchedRule: 'proxy.bad-request', error: { kind: dest.error === 421 ? 'misdirected_request' : 'bad_request', message: dest.message } });
    }
    const decision = options.policy.decide(dest.host, dest.port, method);
    if (decision.action === 'deny') {
      refuse(res, 403, `capsem: ${dest.host}:${dest.port} is blocked by policy rule ${decision.rule}\n`);
      req.resume();
      return finish({ decision: 'denied', status: 403, matchedRule: decision.rule, error: { kind: 'destination_denied', message: `blocked by ${decision.rule}` } });
    }

    let ttfb: number | null = null;
    let settled = false;
    let responseTap: BodyTap | null = null;
    let responseHeaders: Record<string, string | string[]> | null = null;
    let abortUpstream: ((err?: Error) => void) | null = null;
    const fail = (err: NodeJS.ErrnoException): void => {
      if (settled) return;
      settled = true;
      if (err instanceof DestinationPrivate) {
        refuse(res, 403, `capsem: ${dest.host} is in private address space, blocked by policy rule ${PRIVATE_ADDRESS_RULE}\n`);
        return finish({ decision: 'denied', status: 403, matchedRule: PRIVATE_ADDRESS_RULE, error: { kind: 'destination_private', message: err.message } });
      }
      const error: ExchangeError = upstreamError(err, `${dest.host}:${dest.port}`);
      if (res.headersSent) {
        // The status is already on the wire: abort rather than end, so the client cannot take a
        // cut stream for a complete one.
        res.destroy();
        return finish({ decision: 'allowed', status: res.statusCode, responseHeaders, responseBody: responseTap?.body() ?? EMPTY_BODY, matchedRule: decision.rule, ttfbMs: ttfb, error });
      }
      refuse(res, 502, `capsem: ${error.message}\n`);
      finish({ decision: 'allowed', status: 502, matchedRule: decision.rule, error });
    };
    // Held (corked) until the end of this event-loop turn, so a turn's body pieces go out as one write.
    let corked = false;
    const release = (): void => {
      if (!corked) return;
      corked = false;
      res.socket?.uncork();
    };
    const handler: Dispatcher.DispatchHandlers = {
      onConnect: (abort) => {
        abortUpstream = abort;
      },
      onError: fail,
      onHeaders: (status, raw, resume, statusText) => {
        if (status < 200) return true;
        ttfb = Math.round(performance.now() - t0);
        responseTap = new BodyTap(bodyCap);
        responseHeaders = headersFromRaw(raw);
        res.writeHead(status, statusText, forwardHeaders(responseHeaders));
        // A stream (no length) may hold its first byte back for long: send the head at once. A
        // sized body goes out with its head in one write.
        if (responseHeaders['content-length'] === undefined) res.flushHeaders();
        res.on('drain', resume);
        return true;
      },
      onData: (chunk) => {
        responseTap!.push(chunk);
        if (!corked && res.socket) {
          corked = true;
          res.socket.cork();
          setImmediate(release);
        }
        if (!res.write(chunk)) {
          release();
          return false;
        }
        if ((res.socket?.writableLength ?? 0) >= COALESCE_BYTES) release();
        return true;
      },
      onComplete: () => {
        if (settled) return;
        settled = true;
        // Ended while still corked, the end (an empty write, or the last chunk marker) joins the
        // body's write: released first, it cost a write system call of its own, one in three.
        res.end();
        release();
        finish({ decision: 'allowed', status: res.statusCode, responseHeaders, responseBody: responseTap?.body() ?? EMPTY_BODY, matchedRule: decision.rule, ttfbMs: ttfb });
      },
    };
    res.on('close', () => {
      if (settled || res.writableFinished) return;
      settled = true;
      abortUpstream?.(new Error('client closed'));
      const error = { kind: 'client_canceled', message: 'the client closed the connection before the response ended' };
      finish({ decision: 'allowed', status: responseHeaders ? res.statusCode : null, responseHeaders, responseBody: responseTap?.body() ?? EMPTY_BODY, matchedRule: decision.rule, ttfbMs: ttfb, error });
    });
    // No body (RFC 9112 section 6.3) when neither a length above 0 nor chunking is announced.
    const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
    // The upstream client reads (and at the end destroys) a stream of its own, never the request
    // itself; the tap reads beside it.
    const body = hasBody ? new PassThrough({ highWaterMark: STREAM_BUFFER }) : null;
    if (body) {
      req.on('data', (chunk: Buffer) => requestTap.push(chunk));
      req.on('aborted', () => body.destroy(new Error('the client aborted the request body')));
      req.pipe(body);
    } else req.resume();
    try {
      upstreamClient.dispatch(decision.explicit, {
        origin: originUrl(dest.scheme, dest.host, dest.port),
        path: dest.path,
        method: method as Dispatcher.HttpMethod,
        headers: forwardHeaders(req.headers),
        body,
      }, handler);
    } catch (err) {
      fail(err as NodeJS.ErrnoException);
    }
  }

  function handleUpgrade(req: IncomingMessage, clientSocket: Duplex, head: Buffer): void {
    clientSocket.on('error', () => clientSocket.destroy());
    const unrecordable = options.refusal?.();
    if (unrecordable) return void clientSocket.end(insufficientStorage(unrecordable));
    const startedAt = new Date();
    const t0 = performance.now();
    const dest = target(req);
    if ('error' in dest) {
      clientSocket.end(`HTTP/1.1 ${dest.error} Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
      return;
    }
    const origin = originOf(req.socket);
    const { path, query } = splitTarget(dest.path);
    const request: ExchangeRequest = { startedAt, host: dest.host, port: dest.port, scheme: dest.scheme, kind: 'websocket', method: req.method ?? 'GET', path, query, requestHeaders: req.headers };
    const record = (outcome: ExchangeOutcome, requestBody?: CapturedBody): void => emit(request, outcome, origin, Math.round(performance.now() - t0), requestBody);
    const decision = options.policy.decide(dest.host, dest.port, req.method ?? 'GET');
    if (decision.action === 'deny') {
      const body = `capsem: ${dest.host}:${dest.port} is blocked by policy rule ${decision.rule}\n`;
      clientSocket.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      return record({ decision: 'denied', status: 403, matchedRule: decision.rule });
    }
    const mapped = options.resolve?.get(`${dest.host}:${dest.port}`);
    const upstream = (dest.scheme === 'https' ? httpsRequest : httpRequest)({
      host: dest.host, port: mapped?.port ?? dest.port, method: req.method, path: dest.path, headers: forwardHeaders(req.headers, true),
      servername: isIP(dest.host) ? undefined : dest.host, lookup: lookupFor(dest.port, decision.explicit),
      ...tlsTrust,
    });
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      clientSocket.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      record({ decision: err instanceof DestinationPrivate ? 'denied' : 'allowed', status: err instanceof DestinationPrivate ? 403 : 502, matchedRule: decision.rule, error: upstreamError(err, `${dest.host}:${dest.port}`) });
    });
    upstream.on('response', (res) => {
      // Not switched: relay the refusal as an ordinary response.
      const lines = [`HTTP/1.1 ${res.statusCode} ${res.statusMessage ?? ''}`, ...Object.entries(forwardHeaders(res.headers)).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : v}`), 'connection: close', '', ''];
      clientSocket.write(lines.join('\r\n'));
      res.pipe(clientSocket);
      record({ decision: 'allowed', status: res.statusCode ?? null, responseHeaders: res.headers, matchedRule: decision.rule });
    });
    upstream.on('upgrade', (res, upSocket, upHead) => {
      const lines = [`HTTP/1.1 101 ${res.statusMessage ?? 'Switching Protocols'}`, ...Object.entries(res.headers).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => `${k}: ${x}`)), '', ''];
      clientSocket.write(lines.join('\r\n'));
      if (upHead.length) clientSocket.write(upHead);
      if (head.length) upSocket.write(head);
      let up = head.length;
      let down = upHead.length;
      clientSocket.on('data', (c: Buffer) => (up += c.length));
      upSocket.on('data', (c: Buffer) => (down += c.length));
      clientSocket.pipe(upSocket);
      upSocket.pipe(clientSocket);
      const ttfb = Math.round(performance.now() - t0);
      let done = false;
      const close = (err?: Error): void => {
        if (done) return;
        done = true;
        clientSocket.destroy();
        upSocket.destroy();
        record({ decision: 'allowed', status: 101, responseHeaders: res.headers, matchedRule: decision.rule, ttfbMs: ttfb, responseBody: { bytes: Buffer.alloc(0), total: down, truncated: down > 0 }, error: err ? { kind: 'proxy_error', message: err.message } : null }, { bytes: Buffer.alloc(0), total: up, truncated: up > 0 });
      };
      clientSocket.on('close', () => close());
      upSocket.on('close', () => close());
      clientSocket.on('error', close);
      upSocket.on('error', close);
    });
    upstream.end();
  }

  const mitm: Server = createServer({ highWaterMark: STREAM_BUFFER, requestTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: 30_000 }, handle);
  mitm.on('upgrade', handleUpgrade);
  mitm.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    socket.end('HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: 30\r\n\r\ncapsem: malformed HTTP request');
    const tunnel = tunnels.get(socket);
    emit(
      { startedAt: new Date(), host: tunnel?.host ?? '(unparsed)', port: tunnel?.port ?? 0, scheme: tunnel?.tls === false ? 'http' : 'https', kind: 'malformed', method: '(unparsed)', path: '', query: null, requestHeaders: {} },
      { status: 400, decision: 'denied', matchedRule: 'proxy.malformed-request', error: { kind: 'bad_request', message: `malformed request: ${err.code ?? err.message}` } },
      originOf(socket),
    );
  });

  /**
   * CONNECT: answer 200, then terminate TLS (or read plain HTTP) inside the tunnel. Policy is
   * applied to each request inside, so a refusal reaches the client as a readable 403 naming the
   * rule rather than a failed tunnel.
   */
  function handleConnect(req: IncomingMessage, clientSocket: Duplex, head: Buffer): void {
    clientSocket.on('error', () => clientSocket.destroy());
    const unrecordable = options.refusal?.();
    if (unrecordable) return void clientSocket.end(insufficientStorage(unrecordable));
    const authority = parseAuthority(req.url ?? '', 443);
    const origin = originOf(req.socket);
    const cipherOrder = adopted.get(req.socket)?.cipherOrder ?? 'aes-gcm-first';
    if (!authority) {
      clientSocket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    clientSocket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    const start = async (first: Buffer | null): Promise<void> => {
      if (first === null || first[0] === 0x16) {
        // The CONNECT target's leaf is the default: a client dialling an IP address sends no SNI.
        const fallback = await options.ca.contextFor(authority.host, cipherOrder);
        // With no byte read yet, TLS wraps the socket's own handle (the fast path); once a byte
        // has been read it must be put back in front, through a JavaScript stream.
        const transport = first === null ? (clientSocket as Socket) : (withPrefix(clientSocket, first) as Socket);
        // highWaterMark reaches net.Socket through TLSSocket's options; @types/node omits it.
        const tls = new TLSSocket(transport, {
          isServer: true,
          ...({ highWaterMark: STREAM_BUFFER } as TLSSocketOptions),
          secureContext: fallback,
          ALPNProtocols: ['http/1.1'],
          SNICallback: (servername, cb) => {
            options.ca.contextFor(servername || authority.host, cipherOrder).then((ctx) => cb(null, ctx), (err: Error) => cb(err));
          },
        });
        tunnels.set(tls, { ...authority, tls: true, origin });
        tls.on('error', () => tls.destroy());
        mitm.emit('connection', tls);
      } else {
        const plain = withPrefix(clientSocket, first);
        tunnels.set(plain, { ...authority, tls: false, origin });
        mitm.emit('connection', plain);
      }
    };
    const begin = (first: Buffer | null): void => {
      // Hold further bytes until the TLS layer is in place to read them.
      clientSocket.pause();
      start(first).catch(() => clientSocket.destroy());
    };
    // On the TLS ports nothing but TLS is spoken: wrap at once without reading a byte. Elsewhere
    // the first byte tells TLS from plain HTTP.
    if (head.length > 0) begin(head);
    else if (TLS_PORTS.has(authority.port)) begin(null);
    else clientSocket.once('data', begin);
  }

  mitm.on('connect', handleConnect);
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
    url: `http://127.0.0.1:${port}`,
    adopt(socket, origin, cipherOrder = 'aes-gcm-first') {
      adopted.set(socket, { origin, cipherOrder });
      mitm.emit('connection', socket);
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await upstreamClient.close();
      await new Promise<void>((resolve) => mitm.close(() => resolve()));
    },
  };
}
