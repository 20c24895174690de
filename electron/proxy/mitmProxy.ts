import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSecureContext, rootCertificates } from 'node:tls';
import type { Duplex } from 'node:stream';
import type { CredentialBroker } from '../credentials/credentialBroker.ts';
import type { CertificateAuthority, CipherOrder } from './certificateAuthority.ts';
import { ProxyConnections, STREAM_BUFFER } from './connections.ts';
import { createEgress } from './egress.ts';
import { DEFAULT_BODY_CAP, EMPTY_BODY, exchangeOf, type ConnectionOrigin, type Exchange, type RecordExchange } from './exchange.ts';
import { http1Headers, startHttp2Clients } from './http2Clients.ts';
import type { PolicyStore } from '../policy/policy.ts';
import { newProxyToken, proxyUrl } from './proxyAuth.ts';
import { createGuestDns, type GuestLookup } from './guestDns.ts';
import { whenRecordable } from './admission.ts';
import { serveRequest, type RequestPath } from './requestRelay.ts';
import { StandInAddresses } from './standInAddresses.ts';
import type { ResolveMap } from './resolveMap.ts';
import { enterTunnel, serveConnect, transparentTarget, type TransparentDestination, type TunnelPath } from './tunnels.ts';
import { serveUpgrade, type FrameSink, type UpgradePath } from './upgradeRelay.ts';
import { startUpstreamClient } from './upstreamClient.ts';

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
//
// This file wires the pieces: the listener and the CONNECT/transparent way into a tunnel
// (tunnels.ts), the gates every request passes (admission.ts), one request to one exchange
// (requestRelay.ts) and upgrades (upgradeRelay.ts).

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
  /**
   * While the recording is further behind than its queue's high-water mark, a promise of room; else
   * null. A new request or upgrade waits for it before it is let in, so the record falls behind
   * by a bounded amount and nothing is dropped from it.
   */
  readonly backlog?: () => Promise<void> | null;
  /** Each name the guest looked up, as the DNS answerer answered it. */
  readonly onLookup?: (lookup: GuestLookup) => void;
  /** The guest's DNS lookups are resolved through this instead of the system's resolver (tests). */
  readonly lookup?: (name: string) => Promise<string[]>;
  /** The session's credential broker: real keys for stand-ins on their providers' hosts, refusal elsewhere. */
  readonly credentials?: CredentialBroker;
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

/** Why a connection's bytes are not an HTTP/1.1 request, for its record. */
function malformedReason(err: NodeJS.ErrnoException): string {
  if (err.code === 'HPE_PAUSED_H2_UPGRADE')
    return "HTTP/2 where HTTP/1.1 was due: HTTP/2 is served inside a CONNECT tunnel, chosen by TLS (ALPN h2) or by its preface as the tunnel's first bytes";
  return `malformed request: ${err.code ?? err.message}`;
}

export async function startMitmProxy(options: ProxyOptions): Promise<ProxyHandle> {
  const bodyCap = options.bodyCap ?? DEFAULT_BODY_CAP;
  const idleMs = options.upstreamIdleMs ?? 300_000;
  const token = options.token ?? newProxyToken();
  const connections = new ProxyConnections(token, options.defaultOrigin);
  // Extra upstream CAs go in one secure context built once: built per connection from the whole
  // root list, or passed as `ca` (folded into node:https's pool key per request), it cost most of
  // the proxy's CPU.
  const upstreamContext =
    options.upstreamCa && options.upstreamCa.length > 0
      ? createSecureContext({ ca: [...rootCertificates, ...options.upstreamCa] })
      : undefined;
  const egress = createEgress({ policy: options.policy, resolve: options.resolve, secureContext: upstreamContext });
  const upstreamClient = startUpstreamClient({ egress, idleMs, policyGeneration: () => options.policy.generation });
  const standIns = new StandInAddresses();
  const guestDns = createGuestDns({
    policy: options.policy,
    resolve: options.resolve,
    names: standIns,
    onLookup: (lookup) => options.onLookup?.(lookup),
    refusal: options.refusal,
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });

  const record: RecordExchange = (request, outcome, origin, durationMs = 0, requestBody = EMPTY_BODY) => {
    try {
      options.onExchange(exchangeOf(request, outcome, origin, durationMs, requestBody));
    } catch {
      // A recorder failure must never take the proxy down; the writer counts its own losses.
    }
  };

  /** A refusal on a connection whose request was never read whole: recorded under its tunnel's destination. */
  const recordUnread = (connection: object, outcome: Parameters<RecordExchange>[1]): void => {
    const tunnel = connections.tunnelOf(connection);
    record(
      {
        startedAt: new Date(),
        host: tunnel?.host ?? '(unparsed)',
        port: tunnel?.port ?? 0,
        scheme: tunnel?.tls === false ? 'http' : 'https',
        kind: 'malformed',
        method: '(unparsed)',
        path: '',
        query: null,
        requestHeaders: {},
      },
      outcome,
      connections.originOf(connection),
    );
  };

  const mitm: Server = createServer(
    { highWaterMark: STREAM_BUFFER, requestTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: 30_000 },
    (req, res) => serveRequest(proxy, req, res, null),
  );
  const http2Clients = startHttp2Clients(
    (req, res) => {
      const { stream } = req;
      serveRequest(proxy, req, res, {
        connection: stream.session ?? stream,
        headers: http1Headers(req.headers),
        authority: req.headers[':authority'],
        hasBody: !stream.endAfterHeaders,
      });
    },
    (session, reason) =>
      recordUnread(session, { decision: 'denied', matchedRule: 'proxy.http2-limits', error: { kind: 'bad_request', message: reason } }),
  );
  const proxy: RequestPath & UpgradePath & TunnelPath = {
    connections,
    policy: options.policy,
    credentials: options.credentials,
    refusal: options.refusal,
    backlog: options.backlog,
    bodyCap,
    record,
    upstreamClient,
    egress,
    frames: options.frames,
    idleMs,
    ca: options.ca,
    serveHttp1: (socket) => mitm.emit('connection', socket),
    serveHttp2: (socket) => http2Clients.serve(socket),
  };

  mitm.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) =>
    whenRecordable(proxy, () => {
      try {
        serveUpgrade(proxy, req, client, head);
      } catch {
        client.destroy();
      }
    }),
  );
  mitm.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    socket.end(
      'HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\nconnection: close\r\ncontent-length: 30\r\n\r\ncapsem: malformed HTTP request',
    );
    recordUnread(socket, {
      status: 400,
      decision: 'denied',
      matchedRule: 'proxy.malformed-request',
      error: { kind: 'bad_request', message: malformedReason(err) },
    });
  });
  mitm.on('connect', (req: IncomingMessage, clientSocket: Duplex, head: Buffer) => {
    try {
      serveConnect(proxy, req, clientSocket, head);
    } catch {
      clientSocket.destroy();
    }
  });
  const sockets = new Set<Duplex>();
  const track = (socket: Duplex): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  };
  mitm.on('connection', track);
  await new Promise<void>((resolve, reject) => {
    mitm.once('error', reject);
    mitm.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = mitm.address() as AddressInfo;
  return {
    port,
    url: proxyUrl(port, token),
    get unauthenticated() {
      return connections.unauthenticated;
    },
    adopt(socket, origin, cipherOrder = 'aes-gcm-first', destination) {
      if (!destination) {
        connections.adopt(socket, origin, cipherOrder);
        mitm.emit('connection', socket);
        return;
      }
      socket.on('error', () => socket.destroy());
      track(socket);
      const target = transparentTarget(destination, (address) => standIns.nameAt(address));
      if (!target) return void socket.destroy();
      try {
        enterTunnel(proxy, socket, Buffer.alloc(0), target, origin, cipherOrder);
      } catch {
        socket.destroy();
      }
    },
    answerLookups(stream, origin, transport) {
      track(stream);
      guestDns.serve(stream, origin, transport);
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await upstreamClient.close();
      await new Promise<void>((resolve) => mitm.close(() => resolve()));
    },
  };
}
