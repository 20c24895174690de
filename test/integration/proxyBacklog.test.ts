import { createServer as createHttpServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { ProxyAgent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import type { Exchange } from '../../electron/proxy/exchange.ts';
import { startMitmProxy, type ProxyHandle } from '../../electron/proxy/mitmProxy.ts';
import { PolicyStore } from '../../electron/policy/policy.ts';
import { parseResolveMap } from '../../electron/proxy/resolveMap.ts';
import { startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { tempHome } from '../helpers/tempHome.ts';

// While the recording is further behind than its queue's high-water mark, a new request (inside a
// tunnel) and a WebSocket upgrade wait, unforwarded; once there is room they go through and are
// recorded. The recording yields to the traffic, and the traffic to the recording only when it
// has fallen that far behind, so no exchange is dropped from the record.

const home = tempHome();
const upstreamHome = tempHome();
let upstream: Upstream;
let plain: ReturnType<typeof createHttpServer>;
const hits: string[] = [];
let proxy: ProxyHandle;
let dispatcher: ProxyAgent;
const exchanges: Exchange[] = [];
let room: { promise: Promise<void>; open: () => void } | null = null;

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, ['api.anthropic.com'], (req, _body, res) => {
    hits.push(req.url ?? '');
    res.writeHead(200, { 'content-length': 2 }).end('ok');
  });
  plain = createHttpServer((_req, res) => res.end('plain'));
  plain.on('upgrade', (req, socket) => {
    hits.push(req.url ?? '');
    socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
  });
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  proxy = await startMitmProxy({
    ca: await CertificateAuthority.load(home),
    policy: new PolicyStore(home),
    resolve: parseResolveMap(
      `api.anthropic.com:443=127.0.0.1:${upstream.port},plain.test:80=127.0.0.1:${(plain.address() as AddressInfo).port}`,
    ),
    upstreamCa: [upstream.caPem],
    onExchange: (ex) => exchanges.push(ex),
    backlog: () => room?.promise ?? null,
  });
  dispatcher = new ProxyAgent({ uri: proxy.url, requestTls: { ca: (await CertificateAuthority.load(home)).certPem } });
});
afterAll(async () => {
  await dispatcher.close();
  await proxy.close();
  await upstream.close();
  plain.close();
  home.remove();
  upstreamHome.remove();
});

function closeRoom(): () => void {
  let open = (): void => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  room = { promise, open };
  return () => {
    room = null;
    open();
  };
}

/** A WebSocket upgrade to plain.test through the proxy; resolves with the status line it got. */
function upgrade(): Promise<string> {
  const { port } = new URL(proxy.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () =>
      socket.write(
        `GET http://plain.test/socket HTTP/1.1\r\nHost: plain.test\r\nProxy-Authorization: Basic ${Buffer.from(
          `capsem:${new URL(proxy.url).password}`,
        ).toString(
          'base64',
        )}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
      ),
    );
    let answer = '';
    socket.on('data', (c: Buffer) => {
      answer += c.toString();
      if (answer.includes('\r\n')) {
        resolve(answer.split('\r\n')[0]!);
        socket.destroy();
      }
    });
    socket.on('error', reject);
  });
}

describe('proxy while the recording is behind', () => {
  it('holds new requests and upgrades until the recording has room, then forwards and records them', async () => {
    const open = closeRoom();
    const answered: string[] = [];
    const request = fetch('https://api.anthropic.com/v1/models', { dispatcher }).then(async (r) => {
      answered.push('request');
      return `${r.status} ${await r.text()}`;
    });
    const upgraded = upgrade().then((line) => {
      answered.push('upgrade');
      return line;
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(hits).toEqual([]);
    expect(answered).toEqual([]);
    open();
    expect(await request).toBe('200 ok');
    expect(await upgraded).toBe('HTTP/1.1 101 Switching Protocols');
    expect(hits.sort()).toEqual(['/socket', '/v1/models']);
    await expect.poll(() => exchanges.map((e) => e.path).sort()).toEqual(['/socket', '/v1/models']);
  });
});
