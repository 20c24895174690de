import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

// The proxy's loopback port is open to every process on the machine, other users' included. Only
// the session's own processes may use it: they get the per-session token as the credentials of
// their proxy URL (HTTPS_PROXY=http://capsem:TOKEN@127.0.0.1:PORT), which curl, Node (undici),
// Python and Go send as Proxy-Authorization. A VM's connections arrive through the agent's port,
// never through this one, so for a VM session the port answers nobody.

export const PROXY_USER = 'capsem';

export function newProxyToken(): string {
  return randomBytes(24).toString('base64url');
}

export function proxyUrl(port: number, token: string): string {
  return `http://${PROXY_USER}:${token}@127.0.0.1:${port}`;
}

/** Constant-time: both sides are hashed first, so neither the content nor the length leaks. */
function sameSecret(expected: string, given: string): boolean {
  return timingSafeEqual(createHash('sha256').update(expected).digest(), createHash('sha256').update(given).digest());
}

/** Whether a Proxy-Authorization header carries this session's token. */
export function proxyAuthorized(header: string | string[] | undefined, token: string): boolean {
  if (typeof header !== 'string') return false;
  const m = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!m) return false;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return false;
  const user = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  return sameSecret(`${PROXY_USER}:${token}`, `${user}:${password}`);
}
