import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Session } from 'node:http2';
import type { Duplex } from 'node:stream';

// HTTP/2 toward the clients that choose it: ALPN h2 inside a CONNECT tunnel, or its preface in a
// plain one. Node's http2 server makes a session from a connection the proxy already holds, and its
// requests, in the compatibility API's shape, go down the same path as HTTP/1.1's. Upstream stays
// HTTP/1.1.

/** Requests one connection may have open at once; Node's default is 2^32 - 1. */
const MAX_CONCURRENT_STREAMS = 100;

/** The first line of the client preface (RFC 9113 section 3.4): a plain connection that opens with it speaks HTTP/2 by prior knowledge. */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n');

export function opensWithHttp2Preface(first: Buffer): boolean {
  return first.length >= PREFACE.length && PREFACE.equals(first.subarray(0, PREFACE.length));
}

/**
 * A request's headers as HTTP/1.1 carries them, which is how they are checked, recorded and sent
 * upstream: the pseudo-headers left out, :authority as the Host when no Host came with it.
 */
export function http1Headers(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: Record<string, string | string[] | undefined> = {};
  const authority = headers[':authority'];
  if (authority !== undefined && headers.host === undefined) out.host = authority;
  for (const name of Object.keys(headers)) if (name.charCodeAt(0) !== 0x3a) out[name] = headers[name];
  return out as IncomingHttpHeaders;
}

export interface Http2Clients {
  /** Serves a connection whose client speaks HTTP/2; its requests arrive on the session returned. */
  serve(socket: Duplex): ServerHttp2Session | null;
}

export function startHttp2Clients(onRequest: (req: Http2ServerRequest, res: Http2ServerResponse) => void): Http2Clients {
  const server = createServer({ settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS } }, onRequest);
  // CONNECT inside HTTP/2 takes the same path, which refuses and records it; unheard, Node would
  // answer 405 and nothing would be recorded.
  server.on('connect', onRequest);
  return {
    serve(socket) {
      // A TLS socket made outside a tls.Server keeps `secureConnecting` set after its handshake (the
      // server clears it), and the session would wait for a 'secureConnect' that never comes.
      if ('secureConnecting' in socket) socket.secureConnecting = false;
      let session: ServerHttp2Session | null = null;
      const claim = (made: ServerHttp2Session): void => void (session = made);
      // The server makes the session, and says so, before 'connection' returns.
      server.once('session', claim);
      server.emit('connection', socket);
      server.off('session', claim);
      return session;
    },
  };
}
