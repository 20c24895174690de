import { authorityOf, canonicalHost } from '../policy/addresses.ts';

// Where a request goes, decided once from what the client sent, before policy: the CONNECT
// tunnel's destination or the absolute-form URL, in canonical spelling. The Host header may only
// repeat that destination: a Host naming another host (or one that does not parse) would let a
// request checked against one destination be routed to another by a virtual-hosting upstream, so
// it is refused with 421, and the Host sent upstream is always the destination's own. HTTP/2's
// :authority plays the Host's part and is held to the same rule.

export interface Destination {
  readonly scheme: 'https' | 'http';
  /** Canonical (see canonicalHost): what policy checked, what is dialled, what the ledger's domain shows. */
  readonly host: string;
  readonly port: number;
  /** Origin-form: path and query. */
  readonly path: string;
  /** The Host header to send upstream. */
  readonly authority: string;
}

export interface Refusal {
  readonly status: 400 | 421;
  readonly message: string;
  /** The destination as far as it was understood, for the ledger's domain; null when nothing parsed. */
  readonly host: string | null;
  readonly port: number;
  /** How the request would have gone (its URL's scheme, or its tunnel's), for the ledger's conn_type. */
  readonly scheme: 'https' | 'http';
  /** Its target in origin form (path and query) where the URL parsed, else as it came. */
  readonly path: string;
}

export interface TunnelEnd {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
}

/** A request target's path and query, apart. */
export function splitTarget(target: string): { path: string; query: string | null } {
  const q = target.indexOf('?');
  return q >= 0 ? { path: target.slice(0, q), query: target.slice(q + 1) } : { path: target, query: null };
}

const defaultPort = (scheme: 'https' | 'http'): number => (scheme === 'https' ? 443 : 80);

const AUTHORITY = /^(\[[0-9A-Fa-f:.]+\]|[^\s[\]:/\\?#@]+)(?::(\d{1,5}))?$/;

/** host and port of an authority ("example.com:443", "[::1]:8443"), host canonical; null when it is not one. */
export function parseAuthority(authority: string, fallbackPort: number): { host: string; port: number } | null {
  const m = AUTHORITY.exec(authority);
  if (!m) return null;
  const port = m[2] === undefined ? fallbackPort : Number(m[2]);
  if (port < 1 || port > 65535) return null;
  const host = canonicalHost(m[1]!);
  return host ? { host: host.host, port } : null;
}

/**
 * A Host header that names the destination itself, or the reason it does not. Its port is
 * compared when it carries one: clients leave the scheme's default port out.
 */
function hostHeaderProblem(
  hostHeader: string | undefined,
  dest: { host: string; port: number },
  scheme: 'https' | 'http',
  field = 'Host',
): string | null {
  if (hostHeader === undefined) return null;
  const text = hostHeader.trim();
  const named = parseAuthority(text, dest.port);
  if (!named) return `${field} "${hostHeader.slice(0, 100)}" does not parse`;
  if (named.host !== dest.host || named.port !== dest.port)
    return `${field} ${authorityOf(named.host, named.port, defaultPort(scheme))} is not this request's destination ${authorityOf(dest.host, dest.port, defaultPort(scheme))}`;
  return null;
}

function parseAbsolute(target: string): { scheme: 'https' | 'http'; host: string; port: number; path: string } | null {
  if (!/^https?:\/\//i.test(target)) return null;
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    return null;
  }
  const scheme = url.protocol === 'https:' ? 'https' : 'http';
  const host = canonicalHost(url.hostname);
  if (!host || url.username !== '' || url.password !== '') return null;
  return { scheme, host: host.host, port: url.port === '' ? defaultPort(scheme) : Number(url.port), path: `${url.pathname}${url.search}` };
}

function destination(scheme: 'https' | 'http', host: string, port: number, path: string): Destination {
  return { scheme, host, port, path, authority: authorityOf(host, port, defaultPort(scheme)) };
}

/**
 * A request inside a CONNECT tunnel: it may only go where the tunnel goes. An HTTP/2 request names
 * its host in `authority` (:authority), a Host header, or both, and each it sends must name the
 * tunnel's destination.
 */
export function tunnelledTarget(
  tunnel: TunnelEnd,
  requestTarget: string,
  hostHeader: string | undefined,
  authority?: string,
): Destination | Refusal {
  const scheme = tunnel.tls ? 'https' : 'http';
  let path = requestTarget;
  const refuse = (status: 400 | 421, message: string): Refusal => ({ status, message, host: tunnel.host, port: tunnel.port, scheme, path });
  if (!requestTarget.startsWith('/')) {
    const absolute = parseAbsolute(requestTarget);
    if (!absolute) return refuse(400, 'malformed request target');
    path = absolute.path;
    if (absolute.host !== tunnel.host || absolute.port !== tunnel.port)
      return refuse(421, `${absolute.host}:${absolute.port} is not this tunnel's destination ${tunnel.host}:${tunnel.port}`);
  }
  if (hostHeader === undefined && authority === undefined) return refuse(400, 'a request needs a Host header');
  const problem =
    (authority === undefined ? null : hostHeaderProblem(authority, tunnel, scheme, ':authority')) ??
    (hostHeader === authority ? null : hostHeaderProblem(hostHeader, tunnel, scheme));
  if (problem) return refuse(421, problem);
  return destination(scheme, tunnel.host, tunnel.port, path);
}

/** An absolute-form request to the proxy itself (http://host/path). */
export function absoluteTarget(requestTarget: string, hostHeader: string | undefined): Destination | Refusal {
  // A request to the proxy in origin form is plain HTTP; an absolute one says its scheme even when the rest does not parse.
  const scheme = /^https:/i.test(requestTarget) ? 'https' : 'http';
  if (!/^https?:\/\//i.test(requestTarget))
    return {
      status: 400,
      message: 'this is a proxy: send absolute-form requests (http://host/path) or CONNECT',
      host: null,
      port: 0,
      scheme,
      path: requestTarget,
    };
  const absolute = parseAbsolute(requestTarget);
  if (!absolute) return { status: 400, message: 'malformed request target', host: null, port: 0, scheme, path: requestTarget };
  const problem = hostHeaderProblem(hostHeader, absolute, absolute.scheme);
  if (problem) return { status: 421, message: problem, host: absolute.host, port: absolute.port, scheme, path: absolute.path };
  return destination(absolute.scheme, absolute.host, absolute.port, absolute.path);
}

export function isRefusal(target: Destination | Refusal): target is Refusal {
  return 'status' in target;
}
