import { readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSessionCredentials, type SessionCredentials } from '../../electron/credentials/credentialBroker.ts';
import { credentialRefOf } from '../../electron/credentials/credentialRef.ts';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { framed } from '../../electron/proxy/dnsMessage.ts';
import type { Exchange } from '../../electron/proxy/exchange.ts';
import { startMitmProxy, type ProxyHandle } from '../../electron/proxy/mitmProxy.ts';
import { DEFAULT_POLICY_PATH, PolicyStore } from '../../electron/policy/policy.ts';
import { parseResolveMap } from '../../electron/proxy/resolveMap.ts';
import { json, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { tempHome } from '../helpers/tempHome.ts';

// The way in that `capsem record` has no part of: a VM's transparent connection (a program that
// ignored the proxy, redirected in the guest). The guest looks api.anthropic.com up through the
// DNS answerer and gets a stand-in address; a plain connection to it on port 80 carrying the key's
// stand-in is refused and recorded, never substituted, and nothing reaches the provider's port 80;
// a TLS connection to it on 443 gets the real key, and the answer comes back scrubbed of it, its
// declared length dropped where a key shorter than its stand-in made it untrue.

const REAL = `sk-ant-api03-REAL${'k'.repeat(89)}AA`;
/** A key shorter than 16 bytes: its stand-in has the shape's own length, so swapping them changes a body's length. */
const TINY = 'tiny-REAL-k';
const home = tempHome();
const upstreamHome = tempHome();
let upstream: Upstream;
let plain: Server;
const plainHits: string[] = [];
let proxy: ProxyHandle;
let session: SessionCredentials;
const exchanges: Exchange[] = [];
let pair: NetServer;

/** The stand-in address the guest's DNS answerer gives `name`. */
async function standInAddressOf(name: string): Promise<string> {
  const labels = name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  const query = Buffer.concat([Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]), ...labels, Buffer.from([0, 0, 1, 0, 1])]);
  const reply = await new Promise<Buffer>((resolve) => {
    let held = Buffer.alloc(0);
    const stream = new Duplex({
      read() {},
      write(chunk: Buffer, _encoding, callback) {
        held = Buffer.concat([held, chunk]);
        if (held.length >= 2 && held.length >= 2 + held.readUInt16BE(0)) resolve(held.subarray(2, 2 + held.readUInt16BE(0)));
        callback();
      },
    });
    stream.push(framed(query));
    stream.push(null);
    proxy.answerLookups(stream, { processName: 'dig', pid: 1 }, 'udp');
  });
  // One A record: its address is the answer's last four bytes.
  return [...reply.subarray(reply.length - 4)].join('.');
}

/** A connection the guest redirected to `address:port`, handed to the proxy as a VM's net port does. */
async function transparent(address: string, port: number): Promise<Socket> {
  const accepted = new Promise<Socket>((resolve) => pair.once('connection', resolve));
  const client = connect((pair.address() as AddressInfo).port, '127.0.0.1');
  proxy.adopt(await accepted, { processName: 'go-client', pid: 7 }, 'aes-gcm-first', { address, port });
  return client;
}

async function exchange(socket: Duplex, request: string): Promise<string> {
  let answer = '';
  socket.on('data', (c: Buffer) => (answer += c.toString('latin1')));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()).once('error', () => resolve()));
  socket.write(request);
  await closed;
  return answer;
}

/** An HTTP/1.1 answer's body, its chunked framing undone. */
function bodyOf(answer: string): string {
  const split = answer.indexOf('\r\n\r\n');
  let rest = answer.slice(split + 4);
  if (!/transfer-encoding: chunked/i.test(answer.slice(0, split))) return rest;
  let body = '';
  for (;;) {
    const line = rest.indexOf('\r\n');
    const size = parseInt(rest.slice(0, line), 16);
    if (!size) return body;
    body += rest.slice(line + 2, line + 2 + size);
    rest = rest.slice(line + 4 + size);
  }
}

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, ['api.anthropic.com', 'api.tiny.test'], (req, _body, res) => {
    if (req.headers.host !== 'api.tiny.test') return json(res, 200, { echoed: req.headers['x-api-key'] });
    // A declared length, which the shorter key's longer stand-in makes untrue.
    const text = JSON.stringify({ echoed: req.headers['x-tiny-key'] });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
  });
  plain = createHttpServer((req, res) => {
    plainHits.push(req.url ?? '');
    res.end(JSON.stringify(req.headers));
  });
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  pair = createNetServer();
  await new Promise<void>((resolve) => pair.listen(0, '127.0.0.1', resolve));
  writeFileSync(
    `${home.root}/policy.json`,
    JSON.stringify({
      ...JSON.parse(readFileSync(DEFAULT_POLICY_PATH, 'utf8')),
      credentials: { providers: [{ id: 'tiny', env: 'TINY_API_KEY', header: 'x-tiny-key', hosts: ['api.tiny.test'] }] },
    }),
  );
  const policy = new PolicyStore(home);
  session = openSessionCredentials({
    env: { ANTHROPIC_API_KEY: REAL, TINY_API_KEY: TINY },
    store: null,
    settings: () => policy.policy.credentials,
    credentialRefOf: credentialRefOf(Buffer.alloc(32, 1)),
  });
  proxy = await startMitmProxy({
    ca: await CertificateAuthority.load(home),
    policy,
    resolve: parseResolveMap(
      `api.anthropic.com:443=127.0.0.1:${upstream.port},api.tiny.test:443=127.0.0.1:${upstream.port},api.anthropic.com:80=127.0.0.1:${(plain.address() as AddressInfo).port}`,
    ),
    upstreamCa: [upstream.caPem],
    onExchange: (ex) => exchanges.push(ex),
    credentials: session.broker,
  });
}, 30_000);

afterAll(async () => {
  await proxy.close();
  await upstream.close();
  plain.close();
  pair.close();
  home.remove();
  upstreamHome.remove();
});

describe("a VM's transparent connections to a provider's API", () => {
  it('refuses the stand-in on a plain connection to port 80 and records it; nothing reaches the provider there', async () => {
    const address = await standInAddressOf('api.anthropic.com');
    expect(address).toMatch(/^198\.1[89]\./);
    const standIn = session.guestEnv.ANTHROPIC_API_KEY!;
    const answer = await exchange(
      await transparent(address, 80),
      `GET /v1/models HTTP/1.1\r\nHost: api.anthropic.com\r\nx-api-key: ${standIn}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 403 Forbidden/);
    expect(answer).toContain('to http://api.anthropic.com over plain HTTP: the anthropic key is released only over TLS');
    expect(answer).not.toContain(REAL);
    expect(plainHits).toEqual([]);
    const refused = exchanges.find((ex) => ex.path === '/v1/models')!;
    expect([refused.scheme, refused.port, refused.decision, refused.status, refused.matchedRule]).toEqual([
      'http',
      80,
      'denied',
      403,
      'credentials.stand-in-elsewhere',
    ]);
    expect(refused.credentials?.map((u) => [u.where, u.port, u.tls, u.outcome])).toEqual([['header:x-api-key', 80, false, 'refused']]);
  });

  it('substitutes on a TLS connection to port 443, and the answer comes back with the stand-in where the key was', async () => {
    const address = await standInAddressOf('api.anthropic.com');
    const standIn = session.guestEnv.ANTHROPIC_API_KEY!;
    const tls = tlsConnect({
      socket: await transparent(address, 443),
      servername: 'api.anthropic.com',
      ca: (await CertificateAuthority.load(home)).certPem,
    });
    await new Promise((resolve, reject) => tls.once('secureConnect', resolve).once('error', reject));
    const answer = await exchange(
      tls,
      `GET /v1/echo HTTP/1.1\r\nHost: api.anthropic.com\r\nx-api-key: ${standIn}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(bodyOf(answer)).toBe(`{"echoed":"${standIn}"}`);
    expect(upstream.requests.map((r) => r.headers['x-api-key'])).toEqual([REAL]);
  });

  it('drops a length the scrubbing made untrue: a key shorter than its stand-in reflected in a sized body', async () => {
    const address = await standInAddressOf('api.tiny.test');
    const standIn = session.guestEnv.TINY_API_KEY!;
    expect(standIn.length).toBeGreaterThan(TINY.length);
    const tls = tlsConnect({
      socket: await transparent(address, 443),
      servername: 'api.tiny.test',
      ca: (await CertificateAuthority.load(home)).certPem,
    });
    await new Promise((resolve, reject) => tls.once('secureConnect', resolve).once('error', reject));
    const answer = await exchange(tls, `GET /echo HTTP/1.1\r\nHost: api.tiny.test\r\nx-tiny-key: ${standIn}\r\nConnection: close\r\n\r\n`);
    expect(answer).not.toMatch(/content-length/i);
    expect(bodyOf(answer)).toBe(`{"echoed":"${standIn}"}`);
    expect(answer).not.toContain(TINY);
  });
});
