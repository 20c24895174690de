import { ServerResponse, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { BodyScanner, CredentialUse } from '../credentials/credentialBroker.ts';
import { admit, brokerRequest, entryRefusal, type ProxyPath } from './admission.ts';
import { STREAM_BUFFER } from './connections.ts';
import { EgressRefused } from './egress.ts';
import { BodyTap, EMPTY_BODY, upstreamError, type ExchangeError, type ExchangeOutcome } from './exchange.ts';
import { declaresBody, forwardHeaders } from './forwardHeaders.ts';
import { credentialRefusal, refuse, refusedOutcome, type ClientResponse } from './refusals.ts';
import { headersFromRaw, originOf as originUrl, type UpstreamClient } from './upstreamClient.ts';

// One request, from either protocol's server, to one recorded exchange: let in (admission.ts),
// sent upstream through the upstream client, streamed back a chunk as it arrives while a capped
// copy of each body goes to the recorder, and recorded once when the upstream side has settled.

/** A request from node:http's server, or node:http2's in its compatibility API. */
type ClientRequest = IncomingMessage | Http2ServerRequest;

/** What an HTTP/2 request says elsewhere than an HTTP/1.1 request says it; HTTP/1.1 requests have none. */
export interface Http2Facts {
  /** Its session: the key of the connection's tunnel (the request's socket is a stand-in object). */
  readonly connection: object;
  /** Its headers as HTTP/1.1 carries them (http1Headers). */
  readonly headers: IncomingHttpHeaders;
  readonly authority: string | undefined;
  /** Whether a body follows its headers: said by the stream, not by a header. */
  readonly hasBody: boolean;
}

export interface RequestPath extends ProxyPath {
  readonly upstreamClient: UpstreamClient;
}

/**
 * Body pieces read from upstream in one turn of the event loop go to the client as one write, up to
 * this size: a piece per socket read meant a TLS record, a chunk frame and a system call each, on
 * both sides.
 */
const COALESCE_BYTES = 64 << 10;

/** The part of a client's socket that corking a response's writes uses. */
interface CorkableSocket {
  cork(): void;
  uncork(): void;
  readonly writableLength: number;
}

export interface CoalescedBody {
  /** Writes a piece; false when the client is full and the upstream should wait for 'drain'. */
  write(chunk: Buffer): boolean;
  end(): void;
}

/**
 * A response body whose pieces, read from upstream in one turn of the event loop, go to the client
 * as one write: its socket is corked until the turn ends or COALESCE_BYTES wait. An HTTP/2 response
 * shares its connection with others, so only HTTP/1.1's (`corkable`) is corked.
 */
export function coalescedBody(
  res: Pick<Writable, 'write' | 'end'> & { readonly socket?: CorkableSocket | null },
  corkable: boolean,
): CoalescedBody {
  let corked = false;
  /** The end of the turn that uncorks: cancelled when the body ends or fills first, so a response leaves no callback behind. */
  let turnEnd: NodeJS.Immediate | null = null;
  const release = (): void => {
    if (!corked) return;
    corked = false;
    if (turnEnd) clearImmediate(turnEnd);
    turnEnd = null;
    res.socket?.uncork();
  };
  return {
    write(chunk) {
      if (!corked && corkable && res.socket) {
        corked = true;
        res.socket.cork();
        turnEnd = setImmediate(release);
      }
      if (!res.write(chunk)) {
        release();
        return false;
      }
      if (corked && (res.socket?.writableLength ?? 0) >= COALESCE_BYTES) release();
      return true;
    },
    end() {
      // Ended while still corked, the end (an empty write, or the last chunk marker) joins the
      // body's write instead of costing a write system call of its own.
      res.end();
      release();
    },
  };
}

/**
 * Feeds a request body to the upstream's stream through the credential scanner: a stand-in refused
 * on its way elsewhere destroys the stream there, and the rest of the body is held back.
 */
export function scanBody(
  req: Pick<Readable, 'on' | 'pause' | 'resume'>,
  body: PassThrough,
  scanner: BodyScanner,
  sighted: (use: CredentialUse) => void,
): void {
  let leaked = false;
  req.on('data', (chunk: Buffer) => {
    if (leaked) return;
    const use = scanner.push(chunk);
    if (use) sighted(use);
    if (use?.outcome === 'refused') {
      leaked = true;
      return void body.destroy(new Error('the request body carries a stand-in for a provider key'));
    }
    if (!body.write(chunk)) {
      req.pause();
      body.once('drain', () => req.resume());
    }
  });
  req.on('end', () => leaked || body.end());
}

/** Serves one request; a bug of ours costs that request, never the proxy. */
export function serveRequest(proxy: RequestPath, req: ClientRequest, res: ClientResponse, http2: Http2Facts | null): void {
  try {
    relayRequest(proxy, req, res, http2);
  } catch (err) {
    refuse(res, 500, `capsem: the proxy failed on this request: ${(err as Error).message}\n`);
  }
}

/** One request, from either protocol's server: admitted, sent upstream, streamed back and recorded. */
function relayRequest(proxy: RequestPath, req: ClientRequest, res: ClientResponse, http2: Http2Facts | null): void {
  const { bodyCap, credentials } = proxy;
  const connection = http2 ? http2.connection : req.socket;
  const headers = http2 ? http2.headers : req.headers;
  const turnedAway = entryRefusal(proxy, connection, headers);
  if (turnedAway) {
    req.resume();
    return refuse(res, turnedAway.status, turnedAway.body, turnedAway.headers);
  }
  const t0 = performance.now();
  const requestTap = new BodyTap(bodyCap);
  const origin = proxy.connections.originOf(connection);
  const admission = admit(proxy.policy, proxy.connections.tunnelOf(connection), req, 'request', headers, http2?.authority);
  const uses: CredentialUse[] = [];
  const finish = (outcome: ExchangeOutcome): void =>
    proxy.record(
      admission.request,
      uses.length > 0 ? { ...outcome, credentials: uses } : outcome,
      origin,
      Math.round(performance.now() - t0),
      requestTap.body(),
    );
  if (!admission.admitted) {
    refuse(res, admission.status, admission.body);
    req.resume();
    return finish(admission.outcome);
  }
  const { dest, decision } = admission;
  const brokered = brokerRequest(credentials, dest, forwardHeaders(headers, dest.authority));
  uses.push(...brokered.uses);
  if (brokered.refusal) {
    refuse(res, 403, `capsem: ${brokered.refusal}\n`);
    req.resume();
    return finish(credentialRefusal(brokered.refusal));
  }
  const scanner = credentials?.bodyScanner(dest.host, bodyCap) ?? null;
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
  const settle = (
    outcome: Omit<ExchangeOutcome, 'decision' | 'matchedRule'> & Partial<Pick<ExchangeOutcome, 'decision' | 'matchedRule'>>,
  ): void => {
    if (settled) return;
    settled = true;
    finish({ decision: 'allowed', matchedRule: decision.rule, ...outcome });
  };
  const received = (): Pick<ExchangeOutcome, 'status' | 'responseHeaders' | 'responseBody' | 'ttfbMs'> => ({
    status: responseHeaders ? res.statusCode : null,
    responseHeaders,
    responseBody: responseTap?.body() ?? EMPTY_BODY,
    ttfbMs: ttfb,
  });
  const fail = (err: NodeJS.ErrnoException): void => {
    if (settled) return;
    if (leak) {
      const message = credentials!.refusal(leak);
      if (!clientGone) refuse(res, 403, `capsem: ${message}\n`);
      return settle(credentialRefusal(message));
    }
    if (err instanceof EgressRefused) {
      if (!clientGone) refuse(res, 403, `capsem: ${err.message}\n`);
      return settle(refusedOutcome(err));
    }
    if (clientGone)
      return settle({
        ...received(),
        error: { kind: 'client_canceled', message: 'the client closed the connection before the response ended' },
      });
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
  const responseBody = coalescedBody(res, http2 === null);
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
      return responseBody.write(chunk);
    },
    onComplete: () => {
      if (settled) return;
      responseBody.end();
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
      scanBody(req, body, scanner, (use) => {
        uses.push(use);
        if (use.outcome === 'refused') leak = use;
      });
    } else req.pipe(body);
  } else req.resume();
  try {
    proxy.upstreamClient.dispatch(
      decision.explicit,
      {
        origin: originUrl(dest.scheme, dest.host, dest.port),
        path: brokered.path,
        method: (req.method ?? 'GET') as Dispatcher.HttpMethod,
        headers: brokered.headers,
        body,
      },
      handler,
    );
  } catch (err) {
    fail(err as NodeJS.ErrnoException);
  }
}
