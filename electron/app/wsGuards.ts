import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { BROWSER_TOKEN_PARAM } from '../contract/browserMode.ts';

// Who may open the browser-mode socket. Loopback is not enough: any web page the user visits can
// aim a WebSocket at 127.0.0.1, and a DNS-rebinding page can even make its own name resolve there.
// So a connection must name this server in its Host header (a rebinding page's requests carry its
// own name), come from this server's own page (Origin), and carry the per-run token the page was
// opened with.

export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Constant-time comparison; hashing first makes the lengths equal so the length leaks nothing either. */
export function tokenMatches(expected: string, given: string | null): boolean {
  if (given === null) return false;
  const a = createHash('sha256').update(expected).digest();
  const b = createHash('sha256').update(given).digest();
  return timingSafeEqual(a, b);
}

/** The Host values and Origins this server answers to: its own port, and a dev server's that proxies to it. */
export function allowedPeers(port: number, devPort?: number): { hosts: Set<string>; origins: Set<string> } {
  const ports = devPort ? [port, devPort] : [port];
  const hosts = new Set(ports.flatMap((p) => [`127.0.0.1:${p}`, `localhost:${p}`]));
  return { hosts, origins: new Set([...hosts].map((h) => `http://${h}`)) };
}

export type Verdict = { readonly ok: true } | { readonly ok: false; readonly status: number; readonly reason: string };

export function checkHost(headers: IncomingHttpHeaders, hosts: ReadonlySet<string>): Verdict {
  const host = (headers.host ?? '').toLowerCase();
  return hosts.has(host) ? { ok: true } : { ok: false, status: 403, reason: `refused: Host "${host.slice(0, 60)}" is not this server` };
}

export function checkSocket(headers: IncomingHttpHeaders, url: URL, origins: ReadonlySet<string>, token: string): Verdict {
  const origin = headers.origin;
  if (origin === undefined || !origins.has(origin.toLowerCase()))
    return { ok: false, status: 403, reason: `refused: origin ${(origin ?? 'none').slice(0, 60)} is not this app` };
  if (!tokenMatches(token, url.searchParams.get(BROWSER_TOKEN_PARAM)))
    return { ok: false, status: 401, reason: 'refused: missing or wrong token; open the URL Capsem printed' };
  return { ok: true };
}
