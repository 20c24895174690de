import type { IncomingHttpHeaders } from 'node:http';
import type { CipherOrder } from './certificateAuthority.ts';
import type { ConnectionOrigin } from './exchange.ts';
import { proxyAuthorized } from './proxyAuth.ts';
import type { TunnelEnd } from './requestTarget.ts';

// What the proxy knows about each client connection: the tunnel it is the inside of, the guest
// process it was adopted for, and whether it needs credentials. Keyed weakly by the connection
// object (a socket, or an HTTP/2 session), so a closed connection takes its entry with it.

/**
 * Bytes a client connection buffers before the upstream is paused. Node's 16 KiB default is one
 * TLS record: every chunk would pause and resume the upstream socket, which slowed a large download.
 */
export const STREAM_BUFFER = 256 << 10;

export interface Tunnel extends TunnelEnd {
  readonly origin: ConnectionOrigin;
}

interface Adopted {
  readonly origin: ConnectionOrigin;
  readonly cipherOrder: CipherOrder;
}

export class ProxyConnections {
  private readonly tunnels = new WeakMap<object, Tunnel>();
  private readonly adopted = new WeakMap<object, Adopted>();
  /** Connections that need no credentials: a VM's, the inside of an authorised tunnel, a socket that authenticated once. */
  private readonly trusted = new WeakSet<object>();
  /** Requests and tunnels refused for lack of the session's credentials. */
  unauthenticated = 0;

  constructor(
    private readonly token: string,
    private readonly defaultOrigin: ConnectionOrigin = {},
  ) {}

  /** Whether a request on this connection may use the proxy; one that may not has been counted. */
  authorised(connection: object, headers: IncomingHttpHeaders): boolean {
    if (this.trusted.has(connection)) return true;
    if (!proxyAuthorized(headers['proxy-authorization'], this.token)) {
      this.unauthenticated += 1;
      return false;
    }
    this.trusted.add(connection);
    return true;
  }

  /** A connection handed over by a VM's net port: its guest process, and the ciphers its TLS is offered. */
  adopt(connection: object, origin: ConnectionOrigin, cipherOrder: CipherOrder): void {
    this.adopted.set(connection, { origin, cipherOrder });
    this.trusted.add(connection);
  }

  /** The inside of a tunnel: its requests are held to the tunnel's destination and need no credentials. */
  enter(connection: object, tunnel: Tunnel): void {
    this.tunnels.set(connection, tunnel);
    this.trusted.add(connection);
  }

  tunnelOf(connection: object): Tunnel | undefined {
    return this.tunnels.get(connection);
  }

  originOf(connection: object): ConnectionOrigin {
    return this.tunnels.get(connection)?.origin ?? this.adopted.get(connection)?.origin ?? this.defaultOrigin;
  }

  cipherOrderOf(connection: object): CipherOrder {
    return this.adopted.get(connection)?.cipherOrder ?? 'aes-gcm-first';
  }
}
