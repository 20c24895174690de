import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { TLSSocket, type TLSSocketOptions } from 'node:tls';
import { entryRefusal, type ProxyPath } from './admission.ts';
import { canonicalHost } from '../policy/addresses.ts';
import type { CertificateAuthority, CipherOrder } from './certificateAuthority.ts';
import { STREAM_BUFFER, type Tunnel } from './connections.ts';
import type { ConnectionOrigin } from './exchange.ts';
import { opensWithHttp2Preface } from './http2Clients.ts';
import { rawAnswer, STATUS_TEXT } from './refusals.ts';
import { parseAuthority } from './requestTarget.ts';

// The way into a tunnel: a CONNECT on the proxy's port, or a VM's connection that ignored the
// proxy (redirected in the guest, with its original destination). Either way TLS is terminated
// with a leaf for its name (or plain HTTP read as it comes), then the connection is handed to the
// HTTP/1.1 or HTTP/2 server, whose requests are held to the tunnel's destination. Policy is
// applied to each request inside, so a refusal reaches the client as a readable 403 naming the
// rule rather than a failed tunnel.

/** Where a tunnel goes: a CONNECT's authority, or the destination of a transparent connection. */
export interface TunnelTarget {
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

export interface TunnelPath extends ProxyPath {
  readonly ca: CertificateAuthority;
  /** Serves the inside of a tunnel whose client speaks HTTP/1.1 (the proxy's own server). */
  serveHttp1(socket: Duplex): void;
  /** Serves the inside of a tunnel whose client speaks HTTP/2; its requests arrive on the session returned. */
  serveHttp2(socket: Duplex): object | null;
}

const TLS_PORTS = new Set([443, 8443]);
/** How long a transparent connection may stay silent before it is taken for a protocol that is neither TLS nor HTTP. */
const SILENCE_MS = 10_000;

/**
 * The tunnel's byte stream with the bytes already read put back in front. A TLSSocket built on a
 * net.Socket reads the kernel handle directly and would never see them, so the TLS layer gets a
 * plain Duplex instead.
 */
export function withPrefix(socket: Duplex, prefix: Buffer): Duplex {
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
export function sniName(tls: TLSSocket): string | null {
  const servername = (tls as TLSSocket & { servername?: string | false }).servername;
  const host = typeof servername === 'string' ? canonicalHost(servername) : null;
  return host?.kind === 'name' ? host.host : null;
}

/**
 * A transparent connection's target: the name its address stands in for, else the address; null
 * when the destination is not an address and a port.
 */
export function transparentTarget(
  destination: TransparentDestination,
  nameAt: (address: string) => string | undefined,
): TunnelTarget | null {
  const address = canonicalHost(destination.address);
  if (address?.kind !== 'address' || !Number.isInteger(destination.port) || destination.port < 1 || destination.port > 65535) return null;
  return { host: nameAt(address.host) ?? address.host, port: destination.port, transparent: true };
}

/** CONNECT: answered 200 once the client may use the proxy, then the tunnel is served. */
export function serveConnect(proxy: TunnelPath, req: IncomingMessage, clientSocket: Duplex, head: Buffer): void {
  clientSocket.on('error', () => clientSocket.destroy());
  const turnedAway = entryRefusal(proxy, req.socket, req.headers);
  if (turnedAway) return rawAnswer(clientSocket, turnedAway.status, STATUS_TEXT[turnedAway.status]!, turnedAway.body, turnedAway.headers);
  const authority = parseAuthority(req.url ?? '', 443);
  const origin = proxy.connections.originOf(req.socket);
  const cipherOrder = proxy.connections.cipherOrderOf(req.socket);
  if (!authority) return rawAnswer(clientSocket, 400, STATUS_TEXT[400]!, 'capsem: CONNECT needs host:port\n');
  clientSocket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  enterTunnel(proxy, clientSocket, head, { ...authority, transparent: false }, origin, cipherOrder);
}

/** A transparent connection that carried neither TLS nor HTTP: refused, and recorded as such. */
function refuseOpaque(proxy: TunnelPath, target: TunnelTarget, origin: ConnectionOrigin, message: string): void {
  proxy.record(
    {
      startedAt: new Date(),
      host: target.host,
      port: target.port,
      scheme: TLS_PORTS.has(target.port) ? 'https' : 'http',
      kind: 'malformed',
      method: '(none)',
      path: '',
      query: null,
      requestHeaders: {},
    },
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
export function enterTunnel(
  proxy: TunnelPath,
  clientSocket: Duplex,
  head: Buffer,
  target: TunnelTarget,
  origin: ConnectionOrigin,
  cipherOrder: CipherOrder,
): void {
  const serve = (socket: Duplex, tls: TLSSocket | null, http2: boolean): void => {
    const tunnel: Tunnel = {
      host: tls && target.transparent ? (sniName(tls) ?? target.host) : target.host,
      port: target.port,
      tls: tls !== null,
      origin,
    };
    if (http2) {
      const session = proxy.serveHttp2(socket);
      if (!session) return void socket.destroy();
      proxy.connections.enter(session, tunnel);
      return;
    }
    proxy.connections.enter(socket, tunnel);
    proxy.serveHttp1(socket);
  };
  const start = async (first: Buffer | null): Promise<void> => {
    if (first === null || first[0] === 0x16) {
      // The target's leaf is the default: a client dialling an IP address sends no SNI.
      const fallback = await proxy.ca.contextFor(target.host, cipherOrder);
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
          proxy.ca.contextFor(servername || target.host, cipherOrder).then(
            (ctx) => cb(null, ctx),
            (err: Error) => cb(err),
          );
        },
      });
      let secure = false;
      tls.on('error', (err: NodeJS.ErrnoException) => {
        // A CONNECT tunnel has its client's word for what it carries; a transparent one only its first byte.
        if (target.transparent && !secure) refuseOpaque(proxy, target, origin, `the TLS handshake failed: ${err.code ?? err.message}`);
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
      refuseOpaque(
        proxy,
        target,
        origin,
        `the client sent nothing within ${SILENCE_MS / 1000} s: only TLS and HTTP are carried (a protocol whose server speaks first is not)`,
      );
      clientSocket.destroy();
    }, SILENCE_MS);
    clientSocket.once('close', () => clearTimeout(silence));
    clientSocket.once('data', (first: Buffer) => {
      clearTimeout(silence);
      begin(first);
    });
  }
}
