import { ServerResponse, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import { PassThrough, type Writable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { CredentialUse } from '../credentials/credentialBroker.ts';
import { keepsLength } from '../credentials/keyForms.ts';
import { admit, brokerRequest, entryRefusal, whenRecordable, type ProxyPath } from './admission.ts';
import { STREAM_BUFFER } from './connections.ts';
import { EgressRefused } from './egress.ts';
import { BodyTap, declaredLength, EMPTY_BODY, upstreamError, type ExchangeError, type ExchangeOutcome } from './exchange.ts';
import { declaresBody, forwardHeaders, headerText } from './forwardHeaders.ts';
import { credentialRefusal, refuse, refusedOutcome, uncheckedBodyRefusal, type ClientResponse } from './refusals.ts';
import { checkBody } from './requestBodyCheck.ts';
import {
  scrubbedBody,
  scrubbedBodyHeaders,
  scrubbedRawHeaders,
  scrubbedText,
  unreadableCoding,
  type ScrubbedBody,
} from './scrubbedResponse.ts';
import { headersFromRaw, originOf as originUrl, type UpstreamClient } from './upstreamClient.ts';

// One request, from either protocol's server, to one recorded exchange: let in (admission.ts),
// sent upstream through the upstream client, streamed back a chunk as it arrives while a capped
// copy of each body goes to the recorder, and recorded once when the upstream side has settled.
// Where a provider key may have gone up, the response is scrubbed of it before the client or the
// recorder sees a byte (scrubbedResponse.ts); elsewhere a request body is checked for stand-ins
// as it goes (requestBodyCheck.ts). Other exchanges pay for neither.

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

/** Serves one request; a bug of ours costs that request, never the proxy. */
export function serveRequest(proxy: RequestPath, req: ClientRequest, res: ClientResponse, http2: Http2Facts | null): void {
  whenRecordable(proxy, () => {
    try {
      relayRequest(proxy, req, res, http2);
    } catch (err) {
      refuse(res, 500, `capsem: the proxy failed on this request: ${(err as Error).message}\n`);
    }
  });
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
  const requestTap = new BodyTap(bodyCap, declaredLength(headers['content-length']));
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
  const scanner = credentials?.bodyScanner(dest) ?? null;
  /** A stand-in found in the body on its way elsewhere: the rest of the body is held back and the request refused. */
  let leak: CredentialUse | null = null;
  /** Why a body on its way elsewhere could not be checked for stand-ins: it is held back and the request refused. */
  let unchecked: string | null = null;
  /** Every form of the keys that may go up on this request, which the response must not carry back; null when none may. */
  const scrub = credentials?.scrubForms(dest) ?? null;
  let scrubbed: ScrubbedBody | null = null;

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
    scrubbed?.destroy();
    if (leak) {
      const message = credentials!.refusal(leak);
      if (!clientGone) refuse(res, 403, `capsem: ${message}\n`);
      return settle(credentialRefusal(message));
    }
    if (unchecked) {
      const refusal = uncheckedBodyRefusal(unchecked);
      if (!clientGone) refuse(res, 403, `capsem: ${refusal.error!.message}\n`);
      return settle(refusal);
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
  /** A piece of the body as the client and the recorder get it. */
  const deliver = (piece: Buffer): boolean => {
    responseTap!.push(piece);
    return responseBody.write(piece);
  };
  const completed = (): void => {
    if (settled) return;
    responseBody.end();
    settle(received());
  };
  const handler: Dispatcher.DispatchHandlers = {
    onConnect: (abort) => {
      abortUpstream = abort;
      if (clientGone) abort(new Error('client closed'));
    },
    onError: fail,
    onHeaders: (status, raw, resume, statusText) => {
      if (status < 200) return true;
      ttfb = Math.round(performance.now() - t0);
      let head = headersFromRaw(scrub ? scrubbedRawHeaders(scrub, raw) : raw);
      let reason = statusText;
      if (scrub) {
        const bodiless = req.method === 'HEAD' || status === 204 || status === 304;
        const coding = bodiless ? undefined : headerText(head['content-encoding']);
        const unreadable = unreadableCoding(coding);
        if (unreadable) {
          // Nothing of it has been sent: the client gets the refusal instead, and the upstream is let go.
          settled = true;
          abortUpstream?.(new Error(unreadable));
          refuse(res, 502, `capsem: ${unreadable}\n`);
          finish({
            decision: 'allowed',
            matchedRule: decision.rule,
            status: 502,
            error: { kind: 'upstream_unreadable', message: unreadable },
          });
          return false;
        }
        scrubbed = scrubbedBody(scrub, coding, {
          deliver,
          drained: resume,
          done: (err) => {
            if (!err) return completed();
            if (settled) return;
            // The head is out: cut the response so the client cannot take it for whole, and let the upstream go.
            res.destroy();
            settle({ ...received(), error: { kind: 'decode_error', message: err.message } });
            abortUpstream?.(err);
          },
        });
        head = scrubbedBodyHeaders(head, scrubbed.decoded, keepsLength(scrub));
        reason = scrubbedText(scrub, statusText);
      }
      responseHeaders = head;
      // The length as the client gets it: a scrubbed body that is decoded on its way declares none.
      responseTap = new BodyTap(bodyCap, declaredLength(head['content-length']));
      const forwarded = forwardHeaders(head);
      if (res instanceof ServerResponse) {
        res.writeHead(status, reason, forwarded);
        // A stream (no length) may hold its first byte back for long: send the head at once. A
        // sized body goes out with its head in one write.
        if (head['content-length'] === undefined) res.flushHeaders();
      } else {
        // HTTP/2 has no reason phrase (Node warns when given one), and sends its head at once.
        res.writeHead(status, forwarded);
      }
      res.on('drain', () => {
        scrubbed?.clientDrained();
        resume();
      });
      return true;
    },
    onData: (chunk) => (scrubbed ? scrubbed.write(chunk) : deliver(chunk)),
    onComplete: () => {
      if (settled) return;
      // A scrubbed body completes once what the scrubber (and any decoder) held has gone too.
      if (scrubbed) return scrubbed.end();
      completed();
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
      checkBody(req, body, scanner, headerText(headers['content-encoding']), {
        sighted: (use) => {
          uses.push(use);
          if (use.outcome === 'refused') leak = use;
        },
        unchecked: (reason) => (unchecked = reason),
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
