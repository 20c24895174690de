import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Http2ServerRequest, type Http2ServerResponse, type ServerHttp2Session } from 'node:http2';
import type { Duplex } from 'node:stream';

// HTTP/2 toward the clients that choose it: ALPN h2 inside a CONNECT tunnel, or its preface in a
// plain one. Node's http2 server makes a session from a connection the proxy already holds, and its
// requests, in the compatibility API's shape, go down the same path as HTTP/1.1's. Upstream stays
// HTTP/1.1.

/** Requests one connection may have open at once; Node's default is 2^32 - 1. */
const MAX_CONCURRENT_STREAMS = 100;
/** A request's header list, decoded (HPACK lets a few KiB on the wire stand for megabytes): Node's default, stated so it cannot drift. */
const MAX_HEADER_LIST_BYTES = 65_535;
/** Fields in a request's header list: Node's default, stated. */
const MAX_HEADER_FIELDS = 128;
/** Memory the HTTP/2 layer may hold for one connection, in MB, past which it refuses new streams: Node's default, stated. */
const MAX_SESSION_MEMORY_MB = 10;
const LIMITS = `${MAX_CONCURRENT_STREAMS} requests open at once, header lists of ${MAX_HEADER_LIST_BYTES} bytes and ${MAX_HEADER_FIELDS} fields`;

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

/**
 * Serves HTTP/2 clients: each request to `onRequest`; what the HTTP/2 layer refuses below the
 * requests (a client past the limits, a protocol error) to `onRefused`, once per refusal, with why.
 */
export function startHttp2Clients(
  onRequest: (req: Http2ServerRequest, res: Http2ServerResponse) => void,
  onRefused: (session: ServerHttp2Session, reason: string) => void,
): Http2Clients {
  const server = createServer(
    {
      settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS, maxHeaderListSize: MAX_HEADER_LIST_BYTES },
      maxHeaderListPairs: MAX_HEADER_FIELDS,
      maxSessionMemory: MAX_SESSION_MEMORY_MB,
    },
    onRequest,
  );
  // CONNECT inside HTTP/2 takes the same path, which refuses and records it; unheard, Node would
  // answer 405 and nothing would be recorded.
  server.on('connect', onRequest);
  // The HTTP/2 layer ended the connection (past its limits, or a protocol error); a socket error is the client going, no refusal.
  server.on('sessionError', (err: NodeJS.ErrnoException, session: ServerHttp2Session) => {
    if (err.code?.startsWith('ERR_HTTP2_') && err.code !== 'ERR_HTTP2_SESSION_ERROR')
      onRefused(session, `the HTTP/2 connection was refused and closed (${err.message}); a client may have ${LIMITS}`);
  });
  server.on('session', (session: ServerHttp2Session) => watchRefusedStreams(session, onRefused));
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

/**
 * Streams the HTTP/2 layer reset before a request reached the proxy (a header list past the
 * limits) raise no event: they are the ids it processed that never came as requests, counted when
 * a later request skips past them and when the client ends the connection.
 */
function watchRefusedStreams(session: ServerHttp2Session, onRefused: (session: ServerHttp2Session, reason: string) => void): void {
  let accounted = 0;
  const refusedUpTo = (id: number | undefined): void => {
    if (id === undefined || id <= accounted) return;
    // Client streams are the odd ids, each one past the last.
    const refused = Math.ceil((id - accounted) / 2);
    accounted = id;
    onRefused(
      session,
      `${refused} HTTP/2 request${refused === 1 ? ' was' : 's were'} refused before ${refused === 1 ? 'it was' : 'they were'} whole; a client may have ${LIMITS}`,
    );
  };
  session.on('stream', (stream) => {
    const id = stream.id ?? 0;
    refusedUpTo(id - 2);
    accounted = Math.max(accounted, id);
  });
  session.socket.once('end', () => refusedUpTo(session.state.lastProcStreamID));
}
