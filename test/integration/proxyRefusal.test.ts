import { createServer as createHttpServer } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import { connect, type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { ProxyAgent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import type { Exchange } from '../../electron/proxy/exchange.ts';
import { startMitmProxy, type ProxyHandle } from '../../electron/proxy/mitmProxy.ts';
import { PolicyStore } from '../../electron/policy/policy.ts';
import { parseResolveMap } from '../../electron/proxy/resolveMap.ts';
import { startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { tempHome } from '../helpers/tempHome.ts';

// While the session cannot be recorded, the proxy refuses every new request, whichever way it
// comes (absolute-form, CONNECT, inside a tunnel opened before, WebSocket upgrade), with a 507
// that says why, and forwards none of them.

const REASON = 'cannot write session.db: database or disk is full';
const BODY = `capsem: this session cannot be recorded: ${REASON}; request refused\n`;
const home = tempHome();
const upstreamHome = tempHome();
let upstream: Upstream;
let plain: ReturnType<typeof createHttpServer>;
const plainHits: string[] = [];
let proxy: ProxyHandle;
let dispatcher: ProxyAgent;
let caPem: string;
let refusing: string | null = null;
const exchanges: Exchange[] = [];

beforeAll(async () => {
  // A sized body, so a response read off a raw socket is known to be whole.
  upstream = await startUpstream(upstreamHome, ['api.anthropic.com'], (_req, _body, res) =>
    res.writeHead(200, { 'content-length': 2 }).end('ok'),
  );
  plain = createHttpServer((req, res) => {
    plainHits.push(req.url ?? '');
    res.end('plain');
  });
  plain.on('upgrade', (req, socket) => {
    plainHits.push(req.url ?? '');
    socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
  });
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  const plainPort = (plain.address() as AddressInfo).port;
  proxy = await startMitmProxy({
    ca: await CertificateAuthority.load(home),
    policy: new PolicyStore(home),
    resolve: parseResolveMap(`api.anthropic.com:443=127.0.0.1:${upstream.port},plain.test:80=127.0.0.1:${plainPort}`),
    upstreamCa: [upstream.caPem],
    onExchange: (ex) => exchanges.push(ex),
    refusal: () => refusing,
  });
  caPem = (await CertificateAuthority.load(home)).certPem;
  dispatcher = new ProxyAgent({ uri: proxy.url, requestTls: { ca: caPem } });
});
afterAll(async () => {
  await dispatcher.close();
  await proxy.close();
  await upstream.close();
  plain.close();
  home.remove();
  upstreamHome.remove();
});

/** True once `answer` holds a whole response head and as much body as its content-length says. */
function whole(answer: string): boolean {
  const end = answer.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(answer.slice(0, end));
  return Buffer.byteLength(answer.slice(end + 4)) >= Number(length?.[1] ?? 0);
}

/** Writes a request on `socket` and reads one whole response. */
function ask(socket: Duplex, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const onData = (c: Buffer): void => {
      answer += c.toString();
      if (!whole(answer)) return;
      socket.off('data', onData);
      resolve(answer);
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(request);
  });
}

/** The request with the session's credentials after its request line, as its own processes send it. */
function authorised(request: string): string {
  const url = new URL(proxy.url);
  const line = request.indexOf('\r\n') + 2;
  return `${request.slice(0, line)}Proxy-Authorization: Basic ${Buffer.from(`${url.username}:${url.password}`).toString('base64')}\r\n${request.slice(line)}`;
}

/** Sends raw bytes to the proxy on a new connection and reads its answer. */
async function raw(request: string): Promise<string> {
  const socket = connect(proxy.port, '127.0.0.1');
  try {
    return await ask(socket, authorised(request));
  } finally {
    socket.destroy();
  }
}

/** A TLS connection to api.anthropic.com through a CONNECT tunnel, for requests that must share it. */
async function tunnel(): Promise<TLSSocket> {
  const socket = connect(proxy.port, '127.0.0.1');
  expect(await ask(socket, authorised('CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n'))).toBe(
    'HTTP/1.1 200 Connection Established\r\n\r\n',
  );
  const tls = tlsConnect({ socket, servername: 'api.anthropic.com', ca: caPem });
  await new Promise((resolve) => tls.once('secureConnect', resolve));
  return tls;
}

describe('the proxy while the session cannot be recorded', () => {
  it('refuses a request inside a tunnel opened before the failure, and forwards it again once recording works', async () => {
    const tls = await tunnel();
    const before = await ask(tls, 'GET /v1/models HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n');
    expect(before).toMatch(/^HTTP\/1\.1 200 /);
    const forwarded = upstream.requests.length;
    const recorded = exchanges.length;
    refusing = REASON;
    try {
      const refused = await ask(tls, 'POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\nContent-Length: 2\r\n\r\n{}');
      expect(refused).toMatch(/^HTTP\/1\.1 507 Insufficient Storage\r\n/);
      expect(refused.endsWith(`\r\n\r\n${BODY}`)).toBe(true);
    } finally {
      refusing = null;
      tls.destroy();
    }
    expect(upstream.requests).toHaveLength(forwarded);
    expect(exchanges).toHaveLength(recorded);
    const after = await fetch('https://api.anthropic.com/v1/models', { dispatcher });
    expect(after.status).toBe(200);
    await after.text();
  });

  it('refuses a request on an HTTP/2 connection opened before the failure, and forwards none', async () => {
    const socket = connect(proxy.port, '127.0.0.1');
    expect(await ask(socket, authorised('CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n'))).toBe(
      'HTTP/1.1 200 Connection Established\r\n\r\n',
    );
    const tls = tlsConnect({ socket, servername: 'api.anthropic.com', ca: caPem, ALPNProtocols: ['h2'] });
    await new Promise((resolve, reject) => tls.once('secureConnect', resolve).once('error', reject));
    const session = http2Connect('https://api.anthropic.com', { createConnection: () => tls });
    const post = (): Promise<{ status: number | undefined; body: string }> =>
      new Promise((resolve, reject) => {
        const stream = session.request({ ':method': 'POST', ':path': '/v1/messages' });
        let status: number | undefined;
        let body = '';
        stream.on('response', (headers) => (status = headers[':status']));
        stream.on('data', (chunk: Buffer) => (body += chunk.toString()));
        stream.on('end', () => resolve({ status, body }));
        stream.on('error', reject);
        stream.end('{}');
      });
    try {
      expect((await post()).status).toBe(200);
      const forwarded = upstream.requests.length;
      const recorded = exchanges.length;
      refusing = REASON;
      expect(await post()).toEqual({ status: 507, body: BODY });
      expect(upstream.requests).toHaveLength(forwarded);
      expect(exchanges).toHaveLength(recorded);
    } finally {
      refusing = null;
      session.close();
    }
  });

  it('refuses an absolute-form request, a CONNECT and a WebSocket upgrade with a 507 naming the reason', async () => {
    const recorded = exchanges.length;
    refusing = REASON;
    try {
      const answers = await Promise.all([
        raw('POST http://plain.test/upload HTTP/1.1\r\nHost: plain.test\r\nContent-Length: 5\r\n\r\nhello'),
        raw('CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n'),
        raw(
          'GET http://plain.test/chat HTTP/1.1\r\nHost: plain.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
        ),
      ]);
      for (const answer of answers) {
        expect(answer).toMatch(/^HTTP\/1\.1 507 Insufficient Storage\r\n/);
        expect(answer.endsWith(`\r\n\r\n${BODY}`)).toBe(true);
      }
    } finally {
      refusing = null;
    }
    expect(plainHits).toEqual([]);
    expect(exchanges).toHaveLength(recorded);
  });
});
