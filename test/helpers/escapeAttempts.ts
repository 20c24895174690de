import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

// The ways a program tried to leave through the proxy in the containment review, as requests for
// test/fixtures/egressProbe.mjs, each with the status the proxy must answer. `port` is a server on
// the host's loopback that nothing may reach; `fronted` is a public name the proxy may dial, used
// to carry a Host header that points somewhere else.

export interface EscapeAttempt {
  readonly label: string;
  readonly request: string;
  readonly tunnel?: string;
  readonly tls?: boolean;
  readonly expect: number;
}

/** Spellings of the host's own loopback (and of "this host"), every one of which must be refused. */
export const LOOPBACK_SPELLINGS = [
  '127.0.0.1',
  '[::1]',
  '[::ffff:127.0.0.1]',
  '[::ffff:7f00:1]',
  '0.0.0.0',
  '2130706433',
  '0x7f.1',
  '127.1',
  'localhost',
] as const;

/** The canonical destinations those spellings are recorded under. */
export const LOOPBACK_DOMAINS = ['127.0.0.1', '::1', '0.0.0.0', 'localhost'] as const;

const WEBSOCKET =
  'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';

export function escapeAttempts(port: number, fronted: string): EscapeAttempt[] {
  return [
    ...LOOPBACK_SPELLINGS.map((host) => ({
      label: `Connection: Upgrade to ${host}`,
      request: `GET http://${host}:${port}/v1/sessions HTTP/1.1\r\nAUTHHost: ${host}:${port}\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n`,
      expect: 403,
    })),
    ...LOOPBACK_SPELLINGS.map((host) => ({
      label: `plain GET to ${host}`,
      request: `GET http://${host}:${port}/v1/sessions HTTP/1.1\r\nAUTHHost: ${host}:${port}\r\nConnection: close\r\n\r\n`,
      expect: 403,
    })),
    {
      label: 'WebSocket upgrade inside a tunnel to loopback',
      tunnel: `127.0.0.1:${port}`,
      request: `GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${WEBSOCKET}\r\n`,
      expect: 403,
    },
    {
      label: 'a tunnel to loopback spelled as a number',
      tunnel: `2130706433:${port}`,
      request: `GET /v1/sessions HTTP/1.1\r\nHost: 2130706433:${port}\r\n\r\n`,
      expect: 403,
    },
    {
      label: 'cloud metadata as IPv4-mapped IPv6',
      request:
        'GET http://[::ffff:169.254.169.254]/latest/meta-data/ HTTP/1.1\r\nAUTHHost: [::ffff:169.254.169.254]\r\nConnection: close\r\n\r\n',
      expect: 403,
    },
    {
      label: 'a Host naming loopback behind a public name',
      request: `GET http://${fronted}/ HTTP/1.1\r\nAUTHHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
      expect: 421,
    },
    {
      label: 'a Host naming loopback inside a TLS tunnel',
      tunnel: `${fronted}:443`,
      tls: true,
      request: `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`,
      expect: 421,
    },
    {
      label: 'a Host that does not parse inside a TLS tunnel',
      tunnel: `${fronted}:443`,
      tls: true,
      request: `GET / HTTP/1.1\r\nHost: ${fronted}/elsewhere\r\n\r\n`,
      expect: 421,
    },
  ];
}

/** A model request whose body nests deeper than any recursive parser (JSON.stringify) goes. */
export const DEEP_BODY = `{"model":"claude-sonnet-4-6","max_tokens":5,"messages":[{"role":"user","content":${'['.repeat(20_000)}${']'.repeat(20_000)}}]}`;

function tunnelled(host: string, path: string, body: string): string {
  return `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/** Allowed requests that once broke a parser before their record was written; both must reach the upstream and be recorded. */
export function parserBreakingAttempts(): EscapeAttempt[] {
  return [
    {
      label: 'a request body nested past what any parser recurses through',
      tunnel: 'api.anthropic.com:443',
      tls: true,
      request: tunnelled('api.anthropic.com', '/v1/messages', DEEP_BODY),
      expect: 200,
    },
    {
      label: 'a model path with a broken escape',
      tunnel: 'generativelanguage.googleapis.com:443',
      tls: true,
      request: tunnelled('generativelanguage.googleapis.com', '/v1beta/models/%E0%A4%A:generateContent', '{"contents":[]}'),
      expect: 200,
    },
  ];
}

/** What the loopback server holds, standing for `capsem api` and other sessions' data. */
export const LOOPBACK_SECRET = 'capsem-api-session-data-of-another-session';

/** The hosts the parser-breaking attempts go to: a test maps them to its upstream. */
export const PARSER_HOSTS = ['api.anthropic.com', 'generativelanguage.googleapis.com'] as const;

export interface LoopbackSecret {
  readonly port: number;
  /** Requests that reached it: any at all is an escape. */
  readonly hits: number;
  close(): void;
}

/** A server on the host's loopback that nothing in a session may reach; it counts whoever does. */
export async function startLoopbackSecret(): Promise<LoopbackSecret> {
  let hits = 0;
  const server = createServer((_req, res) => {
    hits += 1;
    res.end(LOOPBACK_SECRET);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    get hits() {
      return hits;
    },
    close: () => server.close(),
  };
}
