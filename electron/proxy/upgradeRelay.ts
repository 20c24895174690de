import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { CredentialUse, OutgoingHeaders } from '../credentials/credentialBroker.ts';
import { keepsLength, type KeyForm } from '../credentials/keyForms.ts';
import { KeyScrubber } from '../credentials/keyScrubber.ts';
import { UpgradedStreamLedger, type FrameRow } from '../telemetry/upgradedStream.ts';
import { admit, brokerRequest, entryRefusal, type ProxyPath } from './admission.ts';
import { EgressRefused, type Egress } from './egress.ts';
import {
  BodyTap,
  EMPTY_BODY,
  NO_CREDENTIALS,
  upstreamError,
  type CapturedBody,
  type ExchangeError,
  type ExchangeOutcome,
} from './exchange.ts';
import { declaresBody, headerText } from './forwardHeaders.ts';
import { credentialRefusal, rawAnswer, refusedOutcome, STATUS_TEXT } from './refusals.ts';
import type { Destination } from './requestTarget.ts';
import { ScrubbedFrames } from './scrubbedFrames.ts';
import { scrubbedBody, scrubbedBodyHeaders, scrubbedRawHeaders, scrubbedText, unreadableCoding } from './scrubbedResponse.ts';
import { headersFromRaw } from './upstreamClient.ts';

// A request that asks to switch protocols (a WebSocket, h2c, anything with Connection: Upgrade),
// let in by the same gates as every other request (admission.ts) and dialled through the same
// egress function. The upstream's answer decides what is relayed and recorded: a 101 becomes a
// relayed connection whose frames are recorded as they pass, any other status an ordinary
// response whose body is recorded like any other. Where a provider key may have gone up with the
// request, what comes back (the head, a response body, the server's frames or bytes after a 101) is
// scrubbed of it before the client or the recorder sees it. Node's server has let go of the
// socket, so every refusal is written onto it raw.

/** Extensions are not offered upstream: a compressed frame (permessage-deflate) could not be recorded as what it says. */
const NOT_FORWARDED = new Set([
  'proxy-connection',
  'proxy-authorization',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'expect',
  'sec-websocket-extensions',
  'host',
]);

export interface UpgradeOutcome {
  readonly status: number | null;
  readonly responseHeaders: IncomingMessage['headers'] | null;
  readonly requestBody: CapturedBody;
  readonly responseBody: CapturedBody;
  readonly ttfbMs: number | null;
  readonly error: ExchangeError | null;
  readonly parseError: string | null;
  /** Set when frames were recorded under this id: the exchange's row must carry it. */
  readonly eventId: string | null;
  readonly websocket: boolean;
}

/** Where the frames of upgraded connections go: written as they pass, under an id taken for their exchange. */
export interface FrameSink {
  reserveEventId(): string;
  frame(netEventId: string, row: FrameRow): void;
}

export interface UpgradeSinks {
  readonly bodyCap: number;
  readonly frames?: FrameSink;
}

export interface UpgradeRequest {
  readonly req: IncomingMessage;
  readonly client: Duplex;
  /** Bytes the client sent past its request head. */
  readonly head: Buffer;
  readonly dest: Destination;
  /** The request's headers as they go upstream (the credential broker's, with the real key where it belongs). */
  readonly headers: IncomingMessage['headers'] | Record<string, string | string[]>;
  readonly explicit: boolean;
  readonly t0: number;
  /** Silence from the upstream, before its answer, after which the exchange is given up. */
  readonly idleMs: number;
  /** Every form of the keys that may go up on this request, which nothing coming back may carry; null when none may. */
  readonly scrub: readonly KeyForm[] | null;
}

export interface UpgradePath extends ProxyPath {
  readonly egress: Egress;
  readonly frames?: FrameSink;
  readonly idleMs: number;
}

/** One upgrade request from node:http's server: let in, relayed, answered and recorded. */
export function serveUpgrade(proxy: UpgradePath, req: IncomingMessage, client: Duplex, head: Buffer): void {
  client.on('error', () => client.destroy());
  const turnedAway = entryRefusal(proxy, req.socket, req.headers);
  if (turnedAway) return rawAnswer(client, turnedAway.status, STATUS_TEXT[turnedAway.status]!, turnedAway.body, turnedAway.headers);
  const t0 = performance.now();
  const origin = proxy.connections.originOf(req.socket);
  const admission = admit(
    proxy.policy,
    proxy.connections.tunnelOf(req.socket),
    req,
    String(req.headers.upgrade ?? '').toLowerCase() === 'websocket' ? 'websocket' : 'request',
    req.headers,
  );
  let uses: readonly CredentialUse[] = NO_CREDENTIALS;
  const record = (outcome: ExchangeOutcome, requestBody?: CapturedBody): void =>
    proxy.record(admission.request, { ...outcome, credentials: uses }, origin, Math.round(performance.now() - t0), requestBody);
  if (!admission.admitted) {
    rawAnswer(client, admission.status, STATUS_TEXT[admission.status] ?? 'Refused', admission.body);
    return record(admission.outcome);
  }
  const { dest, decision } = admission;
  const brokered = brokerRequest(proxy.credentials, dest, req.headers as OutgoingHeaders);
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
  relayUpgrade(
    proxy.egress,
    { bodyCap: proxy.bodyCap, frames: proxy.frames },
    {
      req,
      client,
      head,
      dest: { ...dest, path: brokered.path },
      headers: brokered.headers,
      explicit: decision.explicit,
      t0,
      idleMs: proxy.idleMs,
      scrub: proxy.credentials?.scrubForms(dest) ?? null,
    },
  ).then(
    (outcome) => {
      const request = outcome.websocket && outcome.status === 101 ? admission.request : { ...admission.request, kind: 'request' as const };
      proxy.record(
        request,
        { ...outcome, decision: 'allowed', matchedRule: decision.rule, credentials: uses },
        origin,
        Math.round(performance.now() - t0),
        outcome.requestBody,
      );
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

function headLines(
  statusLine: string,
  headers: IncomingMessage['headers'] | Record<string, string | string[]>,
  drop: ReadonlySet<string> = new Set(),
): string {
  const lines = [statusLine];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || drop.has(name)) continue;
    for (const v of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${v}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

const unanswered = (error: ExchangeError): UpgradeOutcome => ({
  status: null,
  responseHeaders: null,
  requestBody: EMPTY_BODY,
  responseBody: EMPTY_BODY,
  ttfbMs: null,
  error,
  parseError: null,
  eventId: null,
  websocket: false,
});
const CLIENT_GONE: ExchangeError = { kind: 'client_canceled', message: 'the client closed the connection before the upstream answered' };

/** A response's head as the client gets it: scrubbed where a key may have gone up, else Node's reading of it. */
function headOf(
  res: IncomingMessage,
  scrub: readonly KeyForm[] | null,
): { reason: string; headers: IncomingMessage['headers'] | Record<string, string | string[]> } {
  if (!scrub) return { reason: res.statusMessage ?? '', headers: res.headers };
  const raw = res.rawHeaders.map((text) => Buffer.from(text, 'latin1'));
  return { reason: scrubbedText(scrub, res.statusMessage ?? ''), headers: headersFromRaw(scrubbedRawHeaders(scrub, raw)) };
}

/**
 * Relays one upgrade request and resolves with what to record once the exchange is over. An
 * egress refusal (EgressRefused) or a failed dial rejects before anything reached the client, so
 * the caller can still answer it.
 */
export async function relayUpgrade(egress: Egress, sinks: UpgradeSinks, request: UpgradeRequest): Promise<UpgradeOutcome> {
  const { req, client, dest } = request;
  let clientGone = false;
  client.once('close', () => (clientGone = true));
  const dialled = await egress.dial({
    host: dest.host,
    port: dest.port,
    tls: dest.scheme === 'https',
    method: req.method ?? 'GET',
    explicit: request.explicit,
  });
  if (clientGone) {
    dialled.socket.destroy();
    return unanswered(CLIENT_GONE);
  }
  const headers: Record<string, string | string[]> = { host: dest.authority };
  for (const [name, value] of Object.entries(request.headers)) if (value !== undefined && !NOT_FORWARDED.has(name)) headers[name] = value;
  return new Promise<UpgradeOutcome>((resolve) => {
    // No agent: given one (even `agent: false`), node:http dials on its own and ignores createConnection.
    const upstream = httpRequest({
      method: req.method,
      path: dest.path,
      headers,
      createConnection: () => dialled.socket,
      timeout: request.idleMs,
    });
    let settled = false;
    const settle = (outcome: UpgradeOutcome): void => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const ttfb = (): number => Math.round(performance.now() - request.t0);
    const beforeAnswer = (): void => {
      if (!settled && clientGone) upstream.destroy();
    };
    client.once('close', beforeAnswer);
    upstream.on('timeout', () =>
      upstream.destroy(Object.assign(new Error(`${dest.host}:${dest.port} did not answer in time`), { code: 'ETIMEDOUT' })),
    );
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      client.destroy();
      settle(
        unanswered(
          clientGone
            ? CLIENT_GONE
            : {
                kind: err.code === 'ETIMEDOUT' ? 'upstream_timeout' : 'upstream_error',
                message: `exchange with ${dest.host}:${dest.port} failed: ${err.code ?? err.message}`,
              },
        ),
      );
    });
    upstream.on('response', (res) => {
      // Not switched: an ordinary response, relayed and recorded with its body.
      client.off('close', beforeAnswer);
      const first = ttfb();
      const tap = new BodyTap(sinks.bodyCap);
      const scrub = request.scrub;
      const head = headOf(res, scrub);
      let headers = head.headers;
      const done = (error: ExchangeError | null): void =>
        settle({
          status: res.statusCode ?? null,
          responseHeaders: headers,
          requestBody: EMPTY_BODY,
          responseBody: tap.body(),
          ttfbMs: first,
          error,
          parseError: null,
          eventId: null,
          websocket: false,
        });
      const coding = req.method === 'HEAD' ? undefined : headerText(headers['content-encoding']);
      const unreadable = scrub ? unreadableCoding(coding) : null;
      if (unreadable) {
        res.destroy();
        rawAnswer(client, 502, STATUS_TEXT[502]!, `capsem: ${unreadable}\n`);
        return settle({ ...unanswered({ kind: 'upstream_unreadable', message: unreadable }), status: 502 });
      }
      const deliver = (piece: Buffer): boolean => {
        tap.push(piece);
        return client.write(piece);
      };
      const body = scrub
        ? scrubbedBody(scrub, coding, {
            deliver,
            drained: () => res.resume(),
            done: (err) => {
              if (err) {
                client.destroy();
                return done({ kind: 'decode_error', message: err.message });
              }
              client.end();
              done(null);
            },
          })
        : null;
      if (scrub && body) headers = scrubbedBodyHeaders(headers, body.decoded, keepsLength(scrub));
      client.write(
        headLines(
          `HTTP/1.1 ${res.statusCode} ${head.reason}`,
          { ...headers, connection: 'close' },
          new Set(['transfer-encoding', 'keep-alive']),
        ),
      );
      if (body) {
        res.on('data', (chunk: Buffer) => body.write(chunk) || res.pause());
        client.on('drain', () => {
          body.clientDrained();
          res.resume();
        });
        res.on('end', () => body.end());
      } else {
        res.on('data', (chunk: Buffer) => tap.push(chunk));
        res.pipe(client);
        res.on('end', () => done(null));
      }
      res.on('aborted', () => done({ kind: 'upstream_error', message: 'the upstream ended its response early' }));
      client.on('close', () =>
        done(res.complete ? null : { kind: 'client_canceled', message: 'the client closed the connection before the response ended' }),
      );
    });
    upstream.on('upgrade', (res, upSocket: Duplex, upHead: Buffer) => {
      client.off('close', beforeAnswer);
      // The idle limit was for the answer; a WebSocket may rightly stay quiet for long.
      (upSocket as Socket).setTimeout(0);
      const first = ttfb();
      const websocket = String(res.headers.upgrade ?? '').toLowerCase() === 'websocket';
      const frames = sinks.frames;
      const eventId = frames?.reserveEventId() ?? null;
      const ledger = new UpgradedStreamLedger(websocket, sinks.bodyCap, (row) => {
        if (eventId !== null) frames?.frame(eventId, row);
      });
      let failure: Error | null = null;
      const close = (err?: Error): void => {
        failure ??= err ?? null;
        client.destroy();
        upSocket.destroy();
        if (settled) return;
        ledger.end();
        settle({
          status: 101,
          responseHeaders: res.headers,
          ttfbMs: first,
          eventId,
          websocket,
          parseError: ledger.parseError,
          requestBody: { bytes: Buffer.alloc(0), total: ledger.bytesSent, truncated: ledger.bytesSent > 0 },
          responseBody: { bytes: Buffer.alloc(0), total: ledger.bytesReceived, truncated: ledger.bytesReceived > 0 },
          error: failure ? { kind: 'proxy_error', message: failure.message } : null,
        });
      };
      client.on('close', () => close());
      upSocket.on('close', () => close());
      client.on('error', close);
      upSocket.on('error', close);
      if (clientGone) return close();
      const head = headOf(res, request.scrub);
      client.write(headLines(`HTTP/1.1 101 ${head.reason || 'Switching Protocols'}`, head.headers));
      if (request.head.length > 0) {
        ledger.sent(request.head);
        upSocket.write(request.head);
      }
      client.on('data', (chunk: Buffer) => ledger.sent(chunk));
      client.pipe(upSocket);
      const scrub = request.scrub;
      if (!scrub) {
        if (upHead.length > 0) {
          ledger.received(upHead);
          client.write(upHead);
        }
        upSocket.on('data', (chunk: Buffer) => ledger.received(chunk));
        upSocket.pipe(client);
        return;
      }
      // What the server sends is scrubbed before the client and the ledger see it: a WebSocket
      // message by message, any other protocol as a byte stream.
      const serverFrames = websocket ? new ScrubbedFrames(scrub) : null;
      const bytes = websocket ? null : new KeyScrubber(scrub);
      const down = (pieces: readonly Buffer[]): void => {
        let more = true;
        for (const piece of pieces) {
          if (piece.length === 0) continue;
          ledger.received(piece);
          more = client.write(piece) && more;
        }
        if (!more) upSocket.pause();
      };
      const fromServer = (chunk: Buffer): void => {
        try {
          down(serverFrames ? serverFrames.push(chunk) : [bytes!.push(chunk)]);
        } catch (err) {
          close(err as Error);
        }
      };
      client.on('drain', () => upSocket.resume());
      if (upHead.length > 0) fromServer(upHead);
      upSocket.on('data', fromServer);
      upSocket.on('end', () => {
        if (bytes) down([bytes.end()]);
        client.end();
      });
    });
    upstream.end();
  });
}
