import { lookup as dnsLookup } from 'node:dns';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type SecureContext } from 'node:tls';
import { canonicalHost, isPrivateAddress } from '../policy/addresses.ts';
import { PRIVATE_ADDRESS_RULE, type Decision } from '../policy/policy.ts';
import type { ResolveMap } from './resolveMap.ts';

// The one way out of the proxy. Every connection to a destination (a request, a tunnelled request,
// an upgrade, a WebSocket) is dialled here: the name is resolved once, the address is put in its
// one spelling, the policy is checked on that address, and only then is that same address
// connected to. Nothing else in the proxy opens a socket toward a destination, so no request shape
// can reach an address the checks did not see (Node's own clients skip a `lookup` hook for IP
// literals, which once let a private address through).

export type RefusalKind = 'destination_private' | 'destination_denied';

/** The destination was refused before any connection was made. */
export class EgressRefused extends Error {
  override name = 'EgressRefused';
  readonly code = 'EEGRESSREFUSED';
  constructor(
    readonly kind: RefusalKind,
    readonly rule: string,
    message: string,
  ) {
    super(message);
  }
}

export interface EgressPolicy {
  /** The rule naming this address exactly, if any (read on every dial: a reload applies at once). */
  decideAddress(address: string, port: number, method?: string): Decision | null;
  /** Whether private address space is refused (read on every dial). */
  privateAddressesDenied(): boolean;
  /** How a user lets this private destination through, for the refusal's message. */
  howToAllowPrivate(host: string, port: number): string;
}

export interface EgressOptions {
  readonly policy: EgressPolicy;
  /** CAPSEM_RESOLVE: a host sent to a chosen address on purpose, which may be private. */
  readonly resolve?: ResolveMap;
  /** Trust for upstream TLS when extra CAs are configured; the system's roots otherwise. */
  readonly secureContext?: SecureContext;
  /** Time allowed for the name lookup and the connection (and TLS handshake) together. */
  readonly connectTimeoutMs?: number;
}

export interface EgressTarget {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  /** The request's method, for rules that name methods; without it only rules that name none apply. */
  readonly method?: string;
  /** The name rule named this host exactly: private space is allowed for it. */
  readonly explicit: boolean;
  /** ALPN offered upstream; the proxy speaks HTTP/1.1 there, whatever its client speaks. */
  readonly alpn?: readonly string[];
}

export interface Dialled {
  readonly socket: Socket;
  /** The address connected to, in its canonical spelling. */
  readonly address: string;
  readonly port: number;
}

export interface Egress {
  /** Where host:port would be dialled, after every check; rejects with EgressRefused. */
  check(target: Omit<EgressTarget, 'tls' | 'alpn'>): Promise<{ readonly address: string; readonly port: number }>;
  /** Checks, then connects (TLS verifying the name asked for, never the address). */
  dial(target: EgressTarget): Promise<Dialled>;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

function lookup(name: string): Promise<string> {
  return new Promise((resolve, reject) => {
    dnsLookup(name, { family: 0 }, (err, address) => (err ? reject(err) : resolve(address)));
  });
}

export function createEgress(options: EgressOptions): Egress {
  const timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;

  async function check(target: Omit<EgressTarget, 'tls' | 'alpn'>): Promise<{ address: string; port: number }> {
    const host = canonicalHost(target.host);
    if (!host)
      throw new EgressRefused('destination_denied', 'proxy.bad-host', `"${target.host.slice(0, 100)}" is not a host name or address`);
    const mapped = options.resolve?.get(`${host.host}:${target.port}`);
    const resolved = mapped?.address ?? (host.kind === 'address' ? host.host : await lookup(host.host));
    // A resolver may answer in any spelling (::ffff:10.0.0.1): the checks see the canonical one.
    const address = canonicalHost(resolved)?.host ?? resolved;
    const port = mapped?.port ?? target.port;
    const named = host.kind === 'address' ? address : `${host.host} (${address})`;
    const rule = options.policy.decideAddress(address, port, target.method);
    if (rule?.action === 'deny')
      throw new EgressRefused('destination_denied', rule.rule, `${named} is blocked by policy rule ${rule.rule}`);
    // CAPSEM_RESOLVE sends a host to its address on purpose: private space is no surprise there.
    const allowedOnPurpose = target.explicit || mapped !== undefined || rule?.action === 'allow';
    if (!allowedOnPurpose && options.policy.privateAddressesDenied() && isPrivateAddress(address)) {
      const advice = options.policy.howToAllowPrivate(host.host, target.port);
      throw new EgressRefused(
        'destination_private',
        PRIVATE_ADDRESS_RULE,
        `${named} is in private address space, blocked by policy rule ${PRIVATE_ADDRESS_RULE}. ${advice}`,
      );
    }
    return { address, port };
  }

  async function dial(target: EgressTarget): Promise<Dialled> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(Object.assign(new Error(`connecting to ${target.host}:${target.port} timed out`), { code: 'ETIMEDOUT' })),
        timeoutMs,
      );
    });
    try {
      const to = await Promise.race([check(target), timeout]);
      const name = canonicalHost(target.host)!;
      const socket: Socket = target.tls
        ? tlsConnect({
            host: to.address,
            port: to.port,
            servername: name.kind === 'name' ? name.host : undefined,
            ...(options.secureContext ? { secureContext: options.secureContext } : {}),
            ALPNProtocols: [...(target.alpn ?? ['http/1.1'])],
          })
        : netConnect({ host: to.address, port: to.port });
      socket.setNoDelay(true);
      try {
        await Promise.race([connected(socket, target.tls), timeout]);
      } catch (err) {
        socket.destroy();
        throw err;
      }
      return { socket, address: to.address, port: to.port };
    } finally {
      clearTimeout(timer);
    }
  }

  return { check, dial };
}

function connected(socket: Socket, tls: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.once(tls ? 'secureConnect' : 'connect', () => {
      socket.off('error', reject);
      resolve();
    });
  });
}
