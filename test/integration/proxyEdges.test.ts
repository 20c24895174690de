import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { connect as http2Connect } from 'node:http2';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import fc from 'fast-check';
import { ProxyAgent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { CertificateAuthority, type CipherOrder } from '../../electron/proxy/certificateAuthority.ts';
import { SessionRecorder } from '../../electron/recording/sessionRecorder.ts';
import { startMitmProxy, type ProxyHandle } from '../../electron/proxy/mitmProxy.ts';
import { PolicyStore } from '../../electron/policy/policy.ts';
import { parseResolveMap } from '../../electron/proxy/resolveMap.ts';
import { sessionPaths } from '../../electron/store/paths.ts';
import { anthropicStream, json, sse, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { liveSession } from '../helpers/sessionFixture.ts';
import { tempHome } from '../helpers/tempHome.ts';

const home = tempHome();
const upstreamHome = tempHome();
let upstream: Upstream;
let wsServer: ReturnType<typeof createHttpServer>;
let proxy: ProxyHandle;
let recorder: SessionRecorder;
let live: Awaited<ReturnType<typeof liveSession>>;
let dispatcher: ProxyAgent;
let release: () => void = () => undefined;

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, ['api.anthropic.com', 'untrusted.test'], (req, _body, res) => {
    const path = req.url ?? '';
    if (path === '/v1/messages' && req.headers['x-scenario'] === '429')
      return json(res, 429, { type: 'error', error: { type: 'rate_limit_error', message: 'slow down' } });
    if (path === '/v1/messages' && req.headers['x-scenario'] === '500')
      return json(res, 500, { type: 'error', error: { type: 'api_error', message: 'boom' } });
    if (path === '/v1/messages' && req.headers['x-scenario'] === 'cut')
      return sse(res, anthropicStream('claude-sonnet-4-20250514', 'a long answer that gets cut', [], { input: 5, output: 5 }), {
        cutAfter: 6,
      });
    if (path === '/stall-head') return;
    if (path === '/stall-body') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('half of it');
      return;
    }
    if (path === '/slow-sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      release = () => res.end('data: last\n\n');
      return;
    }
    json(res, 200, { ok: true, path });
  });
  wsServer = createHttpServer();
  new WebSocketServer({ server: wsServer }).on('connection', (ws) => {
    ws.on('message', (data, isBinary) =>
      ws.send(isBinary ? Buffer.concat([Buffer.from('echo:'), data as Buffer]) : `echo:${data.toString()}`, { binary: isBinary }),
    );
  });
  await new Promise<void>((r) => wsServer.listen(0, '127.0.0.1', r));
  live = await liveSession(home, null);
  recorder = new SessionRecorder(live.writer, 1 << 20);
  proxy = await startMitmProxy({
    ca: await CertificateAuthority.load(home),
    policy: new PolicyStore(home),
    resolve: parseResolveMap(
      `api.anthropic.com:443=127.0.0.1:${upstream.port},untrusted.test:443=127.0.0.1:${upstream.port},ws.test:80=127.0.0.1:${(wsServer.address() as AddressInfo).port}`,
    ),
    upstreamCa: [upstream.caPem],
    bodyCap: 1 << 20,
    onExchange: (ex) => void recorder.record(ex),
    frames: recorder,
    defaultOrigin: { processName: 'tester', pid: 4242 },
  });
  const caPem = (await CertificateAuthority.load(home)).certPem;
  dispatcher = new ProxyAgent({ uri: proxy.url, requestTls: { ca: caPem } });
}, 30_000);
afterAll(async () => {
  await dispatcher.close();
  await proxy.close();
  await live.end();
  await upstream.close();
  wsServer.close();
  home.remove();
  upstreamHome.remove();
});

/** The Proxy-Authorization line this proxy asks of connections on its loopback port. */
function proxyAuthLine(): string {
  const url = new URL(proxy.url);
  return `Proxy-Authorization: Basic ${Buffer.from(`${url.username}:${url.password}`).toString('base64')}\r\n`;
}

/** A CONNECT tunnel through the proxy's loopback port, as a client with the session's credentials opens it. */
function openTunnel(authority: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(proxy.port, '127.0.0.1', () =>
      socket.write(`CONNECT ${authority} HTTP/1.1\r\n${proxyAuthLine()}Host: ${authority}\r\n\r\n`),
    );
    socket.once('data', (d: Buffer) => (d.toString().startsWith('HTTP/1.1 200') ? resolve(socket) : reject(new Error(d.toString()))));
    socket.once('error', reject);
  });
}

/** One GET with Node's HTTP/2 client, offering only h2, inside a tunnel already open on `tunnel`. */
async function http2Get(tunnel: Socket, path: string): Promise<{ alpn: string | false; status: number | undefined; body: string }> {
  const tls = tlsConnect({
    socket: tunnel,
    servername: 'api.anthropic.com',
    ca: (await CertificateAuthority.load(home)).certPem,
    ALPNProtocols: ['h2'],
  });
  await new Promise((resolve, reject) => tls.once('secureConnect', resolve).once('error', reject));
  const session = http2Connect('https://api.anthropic.com', { createConnection: () => tls });
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request({ ':path': path });
      let status: number | undefined;
      let body = '';
      stream.on('response', (headers) => (status = headers[':status']));
      stream.on('data', (chunk: Buffer) => (body += chunk.toString()));
      stream.on('end', () => resolve({ alpn: tls.alpnProtocol ?? false, status, body }));
      stream.on('error', reject);
    });
  } finally {
    session.close();
  }
}

async function rows(sql: string, ...params: unknown[]): Promise<Record<string, unknown>[]> {
  await new Promise((r) => setTimeout(r, 20));
  await recorder.settled();
  await live.writer.flush();
  const db = new Database(sessionPaths(home, live.id).dbPath, { readonly: true });
  try {
    return db.prepare(sql).all(...params) as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

describe('proxy edges', () => {
  it('refuses a denied destination with a 403 that names the rule, and records it', async () => {
    const res = await fetch('https://169.254.169.254/latest/meta-data/', { dispatcher });
    expect(res.status).toBe(403);
    expect(await res.text()).toMatch(/blocked by policy rule default\.deny-cloud-metadata/);
    const [row] = await rows(
      "SELECT decision, matched_rule, status_code, error_kind, process_name, pid FROM net_events WHERE domain = '169.254.169.254'",
    );
    expect(row).toEqual({
      decision: 'denied',
      matched_rule: 'default.deny-cloud-metadata',
      status_code: 403,
      error_kind: 'destination_denied',
      process_name: 'tester',
      pid: 4242,
    });
  });

  it('refuses a name that resolves to loopback, checking the address actually dialled', async () => {
    const res = await fetch('http://localhost:8080/', { dispatcher });
    expect(res.status).toBe(403);
    expect(await res.text()).toMatch(/private address space, blocked by policy rule default\.deny-private-address/);
    const [row] = await rows("SELECT decision, matched_rule, error_kind FROM net_events WHERE domain = 'localhost'");
    expect(row).toEqual({ decision: 'denied', matched_rule: 'default.deny-private-address', error_kind: 'destination_private' });
  });

  it('applies a changed policy to the next request, also on a connection checked under the old one', async () => {
    const policyHome = tempHome();
    const policyFile = `${policyHome.root}/policy.json`;
    writeFileSync(policyFile, JSON.stringify({ version: 1, rules: [{ id: 'all', action: 'allow', domains: ['*'] }] }));
    const policy = new PolicyStore(policyHome);
    const guarded = await startMitmProxy({
      ca: await CertificateAuthority.load(home),
      policy,
      resolve: parseResolveMap(`api.anthropic.com:443=127.0.0.1:${upstream.port}`),
      upstreamCa: [upstream.caPem],
      onExchange: (ex) => void recorder.record(ex),
    });
    const agent = new ProxyAgent({ uri: guarded.url, requestTls: { ca: (await CertificateAuthority.load(home)).certPem } });
    try {
      const before = await fetch('https://api.anthropic.com/before-the-change', { dispatcher: agent });
      expect(before.status).toBe(200);
      await before.text();
      // The upstream's address, in another spelling than any the request used, is now refused.
      writeFileSync(
        policyFile,
        JSON.stringify({
          version: 1,
          rules: [
            { id: 'no-loopback', action: 'deny', domains: ['0x7f000001'] },
            { id: 'all', action: 'allow', domains: ['*'] },
          ],
        }),
      );
      expect(policy.reload()).toBe(true);
      const after = await fetch('https://api.anthropic.com/after-the-change', { dispatcher: agent });
      expect(after.status).toBe(403);
      expect(await after.text()).toMatch(/api\.anthropic\.com \(127\.0\.0\.1\) is blocked by policy rule no-loopback/);
    } finally {
      await agent.close();
      await guarded.close();
      policyHome.remove();
    }
    expect(upstream.requests.map((r) => r.path)).not.toContain('/after-the-change');
    const [row] = await rows("SELECT decision, matched_rule, error_kind FROM net_events WHERE path = '/after-the-change'");
    expect(row).toEqual({ decision: 'denied', matched_rule: 'no-loopback', error_kind: 'destination_denied' });
  });

  it('verifies the real upstream certificate: an untrusted one is a 502 upstream_tls', async () => {
    const strict = await startMitmProxy({
      ca: await CertificateAuthority.load(home),
      policy: new PolicyStore(home),
      resolve: parseResolveMap(`untrusted.test:443=127.0.0.1:${upstream.port}`),
      onExchange: (ex) => void recorder.record(ex),
    });
    const agent = new ProxyAgent({ uri: strict.url, requestTls: { ca: (await CertificateAuthority.load(home)).certPem } });
    const res = await fetch('https://untrusted.test/x', { dispatcher: agent });
    expect(res.status).toBe(502);
    expect(await res.text()).toMatch(/TLS with untrusted\.test:443 failed/);
    await agent.close();
    await strict.close();
    const [row] = await rows("SELECT error_kind, status_code FROM net_events WHERE domain = 'untrusted.test'");
    expect(row).toEqual({ error_kind: 'upstream_tls', status_code: 502 });
  });

  it('gives up on an upstream that goes quiet: 502 before the head, a cut body after it, both recorded as upstream_timeout', async () => {
    const impatient = await startMitmProxy({
      ca: await CertificateAuthority.load(home),
      policy: new PolicyStore(home),
      resolve: parseResolveMap(`api.anthropic.com:443=127.0.0.1:${upstream.port}`),
      upstreamCa: [upstream.caPem],
      upstreamIdleMs: 300,
      onExchange: (ex) => void recorder.record(ex),
    });
    const agent = new ProxyAgent({ uri: impatient.url, requestTls: { ca: (await CertificateAuthority.load(home)).certPem } });
    const head = await fetch('https://api.anthropic.com/stall-head', { dispatcher: agent });
    expect(head.status).toBe(502);
    expect(await head.text()).toMatch(/api\.anthropic\.com:443 did not answer in time/);
    const body = await fetch('https://api.anthropic.com/stall-body', { dispatcher: agent });
    expect(body.status).toBe(200);
    await expect(body.text()).rejects.toThrow();
    await agent.close();
    await impatient.close();
    const recorded = await rows("SELECT path, status_code, error_kind FROM net_events WHERE path LIKE '/stall-%' ORDER BY path");
    expect(recorded).toEqual([
      { path: '/stall-body', status_code: 200, error_kind: 'upstream_timeout' },
      { path: '/stall-head', status_code: 502, error_kind: 'upstream_timeout' },
    ]);
  });

  it('answers a malformed request with 400, records it, and keeps serving', async () => {
    const reply = await new Promise<string>((resolve) => {
      const socket = connect(proxy.port, '127.0.0.1', () => socket.write('GET /\u0000 bad\r\nHost: x\r\n\r\n'));
      let text = '';
      socket.on('data', (d) => (text += d.toString()));
      socket.on('close', () => resolve(text));
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400 Bad Request/);
    const [row] = await rows("SELECT status_code, matched_rule, error_kind FROM net_events WHERE matched_rule = 'proxy.malformed-request'");
    expect(row).toEqual({ status_code: 400, matched_rule: 'proxy.malformed-request', error_kind: 'bad_request' });
    expect((await fetch('https://api.anthropic.com/ping', { dispatcher })).status).toBe(200);
  });

  it('relays an upgrade the upstream declines as an ordinary response, and records its body', async () => {
    const tunnel = await openTunnel('api.anthropic.com:443');
    const tls = tlsConnect({ socket: tunnel, servername: 'api.anthropic.com', ca: (await CertificateAuthority.load(home)).certPem });
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      tls.on('data', (d: Buffer) => (text += d.toString()));
      tls.on('close', () => resolve(text));
      tls.write('GET /declined-upgrade HTTP/1.1\r\nHost: api.anthropic.com\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n');
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer).toContain('{"ok":true,"path":"/declined-upgrade"}');
    const [row] = await rows(
      "SELECT n.status_code, n.conn_type, n.response_body_preview, b.body FROM net_events n JOIN event_body_blobs b ON b.event_id = n.event_id AND b.direction = 'response' WHERE n.path = '/declined-upgrade'",
    );
    expect(row).toMatchObject({ status_code: 200, conn_type: 'https', response_body_preview: '{"ok":true,"path":"/declined-upgrade"}' });
    expect(String(row!.body)).toBe('{"ok":true,"path":"/declined-upgrade"}');
  });

  it('streams an SSE response to the client as it arrives, not at its end', async () => {
    const res = await fetch('https://api.anthropic.com/slow-sse', { dispatcher });
    const reader = res.body!.getReader();
    const first = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), 5000))]);
    expect(first, 'the first event arrived while the upstream still held the stream open').not.toBeNull();
    expect(Buffer.from(first!.value!).toString()).toContain('data: first');
    release();
    let rest = '';
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      rest += Buffer.from(chunk.value).toString();
    }
    expect(rest).toContain('data: last');
  });

  it('records 429 and 500 answers as model calls with their status and no tokens', async () => {
    for (const scenario of ['429', '500']) {
      const res = await fetch('https://api.anthropic.com/v1/messages', {
        dispatcher,
        method: 'POST',
        headers: { 'x-scenario': scenario, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-sonnet-4-20250514', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(res.status).toBe(Number(scenario));
      await res.text();
    }
    const calls = await rows(
      'SELECT status_code, model, input_tokens, estimated_cost_usd FROM model_calls WHERE status_code >= 400 ORDER BY id',
    );
    expect(calls).toEqual([
      { status_code: 429, model: 'claude-sonnet-4-20250514', input_tokens: null, estimated_cost_usd: 0 },
      { status_code: 500, model: 'claude-sonnet-4-20250514', input_tokens: null, estimated_cost_usd: 0 },
    ]);
  });

  it('aborts the client when the upstream cuts a stream, and records the call as incomplete', async () => {
    const res = await fetch('https://api.anthropic.com/v1/messages', {
      dispatcher,
      method: 'POST',
      headers: { 'x-scenario': 'cut', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sonnet-4-20250514', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await expect(res.text()).rejects.toThrow();
    const [net] = await rows("SELECT error_kind FROM net_events WHERE path = '/v1/messages' ORDER BY seq DESC LIMIT 1");
    expect(net!.error_kind).toMatch(/upstream_error|client_canceled/);
    const [call] = await rows('SELECT usage_details, stop_reason FROM model_calls ORDER BY id DESC LIMIT 1');
    expect(JSON.parse(String(call!.usage_details))).toMatchObject({ incomplete: true });
    expect(call!.stop_reason).toBeNull();
  });

  it('relays a real WebSocket both ways and records each frame under its exchange, sizes and content', async () => {
    // A real client (ws) inside a CONNECT tunnel to a real server (ws), as a guest's program would.
    const tunnel = await openTunnel('ws.test:80');
    const client = new WebSocket('ws://ws.test/chat', { createConnection: () => tunnel });
    const echoes: string[] = [];
    await new Promise<void>((resolve, reject) => {
      client.on('open', () => {
        client.send('hello');
        client.send(Buffer.from([1, 2, 3]));
      });
      client.on('message', (data, isBinary) => {
        echoes.push(isBinary ? `binary:${(data as Buffer).toString('hex')}` : data.toString());
        if (echoes.length === 2) client.close(1000, 'done');
      });
      client.on('close', () => resolve());
      client.on('error', reject);
    });
    expect(echoes).toEqual(['echo:hello', `binary:${Buffer.from('echo:').toString('hex')}010203`]);
    const [row] = await rows("SELECT event_id, status_code, conn_type, decision, parse_error FROM net_events WHERE domain = 'ws.test'");
    expect(row).toMatchObject({ status_code: 101, conn_type: 'websocket', decision: 'allowed', parse_error: null });
    const frames = await rows(
      'SELECT direction, opcode, size, content, body, truncated FROM ws_frames WHERE net_event_id = ? ORDER BY id',
      row!.event_id,
    );
    // Each direction in its own order: the two directions interleave as the network pleases.
    const shown = (direction: string): unknown[] =>
      frames
        .filter((f) => f.direction === direction)
        .map((f) => [f.opcode, f.size, f.content ?? (f.body as Buffer | null)?.toString('hex') ?? null]);
    expect(shown('sent')).toEqual([
      ['text', 5, 'hello'],
      ['binary', 3, '010203'],
      ['close', 6, '1000 done'],
    ]);
    expect(shown('received')).toEqual([
      ['text', 10, 'echo:hello'],
      ['binary', 8, `${Buffer.from('echo:').toString('hex')}010203`],
      ['close', 6, '1000 done'],
    ]);
    expect(frames.every((f) => f.truncated === 0)).toBe(true);
  });

  it('survives arbitrary bytes on its port and inside a TLS tunnel, spoken as HTTP/1.1 or HTTP/2 (property)', async () => {
    const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 400 }),
        fc.constantFrom('port', 'http/1.1', 'h2', 'h2 after its preface'),
        async (bytes, where) => {
          await new Promise<void>((resolve) => {
            const socket = connect(proxy.port, '127.0.0.1', () => {
              if (where === 'port') return void socket.end(Buffer.from(bytes));
              socket.write(`CONNECT api.anthropic.com:443 HTTP/1.1\r\n${proxyAuthLine()}Host: api.anthropic.com:443\r\n\r\n`);
              socket.once('data', () => {
                const sent = where === 'h2 after its preface' ? Buffer.concat([preface, bytes]) : Buffer.from(bytes);
                const tls = tlsConnect(
                  {
                    socket,
                    servername: 'api.anthropic.com',
                    rejectUnauthorized: false,
                    ALPNProtocols: [where === 'http/1.1' ? 'http/1.1' : 'h2'],
                  },
                  () => tls.end(sent),
                );
                tls.on('error', () => resolve());
                tls.on('close', () => resolve());
              });
            });
            socket.on('error', () => resolve());
            socket.on('close', () => resolve());
            socket.setTimeout(200, () => socket.destroy());
          });
        },
      ),
      { numRuns: 40 },
    );
    expect((await fetch('https://api.anthropic.com/still-alive', { dispatcher })).status).toBe(200);
    expect((await http2Get(await openTunnel('api.anthropic.com:443'), '/still-alive-h2')).status).toBe(200);
  }, 60_000);
});

describe('connections handed over by a VM', () => {
  it('serves an adopted connection and records the guest process that opened it', async () => {
    const { Duplex } = await import('node:stream');
    let response = '';
    const toProxy = new Duplex({
      read() {},
      write(chunk: Buffer, _e, cb) {
        response += chunk.toString();
        cb();
      },
    });
    proxy.adopt(toProxy, { processName: 'curl', pid: 77 });
    toProxy.push('GET https://api.anthropic.com/adopted HTTP/1.1\r\nHost: api.anthropic.com\r\nConnection: close\r\n\r\n');
    const deadline = Date.now() + 5000;
    while (!response.includes('"path":"/adopted"') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(response).toMatch(/^HTTP\/1\.1 200/);
    const [row] = await rows("SELECT process_name, pid, status_code FROM net_events WHERE path = '/adopted'");
    expect(row).toEqual({ process_name: 'curl', pid: 77, status_code: 200 });
  });

  it('keeps the guest process on a request with a body, which the upstream client reads to its end', async () => {
    const { Duplex } = await import('node:stream');
    let response = '';
    const toProxy = new Duplex({
      read() {},
      write(chunk: Buffer, _e, cb) {
        response += chunk.toString();
        cb();
      },
    });
    proxy.adopt(toProxy, { processName: 'node', pid: 78 });
    const body = JSON.stringify({ model: 'claude-sonnet-4-6', messages: [] });
    toProxy.push(
      `POST https://api.anthropic.com/adopted-post HTTP/1.1\r\nHost: api.anthropic.com\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    const deadline = Date.now() + 5000;
    while (!response.includes('"path":"/adopted-post"') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(response).toMatch(/^HTTP\/1\.1 200/);
    const [row] = await rows("SELECT process_name, pid, status_code, bytes_sent FROM net_events WHERE path = '/adopted-post'");
    expect(row).toEqual({ process_name: 'node', pid: 78, status_code: 200, bytes_sent: body.length });
  });

  it('serves HTTP/2 on an adopted connection and records the guest process that opened it', async () => {
    const pair = createNetServer();
    await new Promise<void>((r) => pair.listen(0, '127.0.0.1', r));
    const accepted = new Promise<Socket>((r) => pair.once('connection', r));
    const client = connect((pair.address() as AddressInfo).port, '127.0.0.1');
    proxy.adopt(await accepted, { processName: 'node', pid: 80 });
    client.write('CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n');
    await new Promise<void>((resolve) => client.once('data', () => resolve()));
    const answer = await http2Get(client, '/adopted-h2');
    pair.close();
    expect(answer).toEqual({ alpn: 'h2', status: 200, body: '{"ok":true,"path":"/adopted-h2"}' });
    const [row] = await rows("SELECT process_name, pid, status_code FROM net_events WHERE path = '/adopted-h2'");
    expect(row).toEqual({ process_name: 'node', pid: 80, status_code: 200 });
  });

  it('serves a transparent connection as a tunnel to the name its TLS client asks for, and survives arbitrary bytes and destinations on one (property)', async () => {
    const caPem = (await CertificateAuthority.load(home)).certPem;
    const pair = createNetServer();
    await new Promise<void>((r) => pair.listen(0, '127.0.0.1', r));
    const { port } = pair.address() as AddressInfo;
    const transparentClient = async (address: string, dstPort: number): Promise<Socket> => {
      const accepted = new Promise<Socket>((r) => pair.once('connection', r));
      const client = connect(port, '127.0.0.1');
      proxy.adopt(await accepted, { processName: 'go-client', pid: 81 }, 'aes-gcm-first', { address, port: dstPort });
      return client;
    };
    const getThrough = async (client: Socket, path: string): Promise<string> => {
      const tls = tlsConnect({ socket: client, servername: 'api.anthropic.com', ca: caPem });
      tls.write(`GET ${path} HTTP/1.1\r\nHost: api.anthropic.com\r\nConnection: close\r\n\r\n`);
      let answer = '';
      tls.on('data', (c: Buffer) => (answer += c.toString()));
      await new Promise<void>((resolve, reject) => tls.once('close', () => resolve()).once('error', reject));
      return answer;
    };
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 1, maxLength: 400 }),
        fc.oneof(fc.constantFrom('203.0.113.9', '::1', '198.18.0.1', '999.1.1.1', ''), fc.string({ maxLength: 40 })),
        fc.integer({ min: -5, max: 70_000 }),
        async (bytes, address, dstPort) => {
          const client = await transparentClient(address, dstPort);
          await new Promise<void>((resolve) => {
            client.on('error', () => resolve());
            client.on('close', () => resolve());
            client.setTimeout(200, () => client.destroy());
            client.end(Buffer.from(bytes));
          });
        },
      ),
      { numRuns: 40 },
    );
    // An address that stands in for no name: the tunnel takes the name its TLS client sends (SNI).
    expect(await getThrough(await transparentClient('203.0.113.9', 443), '/transparent')).toMatch(
      /^HTTP\/1\.1 200[^]*"path":"\/transparent"/,
    );
    pair.close();
    const [row] = await rows("SELECT domain, port, process_name, pid, status_code FROM net_events WHERE path = '/transparent'");
    expect(row).toEqual({ domain: 'api.anthropic.com', port: 443, process_name: 'go-client', pid: 81, status_code: 200 });
  }, 60_000);

  it('offers the cipher order it was handed with the connection: ChaCha20 first for a guest on an emulated CPU, AES-GCM otherwise', async () => {
    const caPem = (await CertificateAuthority.load(home)).certPem;
    const cipherThrough = async (client: Socket): Promise<string | undefined> => {
      client.write(`CONNECT api.anthropic.com:443 HTTP/1.1\r\n${proxyAuthLine()}Host: api.anthropic.com:443\r\n\r\n`);
      await new Promise<void>((resolve) => client.once('data', () => resolve()));
      const tls = tlsConnect({ socket: client, servername: 'api.anthropic.com', ca: caPem });
      await new Promise<void>((resolve, reject) => tls.once('secureConnect', resolve).once('error', reject));
      const name = tls.getCipher().name;
      tls.destroy();
      return name;
    };
    const pair = createNetServer();
    await new Promise<void>((r) => pair.listen(0, '127.0.0.1', r));
    const { port } = pair.address() as AddressInfo;
    const adoptedClient = async (order: CipherOrder): Promise<Socket> => {
      const accepted = new Promise<Socket>((r) => pair.once('connection', r));
      const client = connect(port, '127.0.0.1');
      proxy.adopt(await accepted, { processName: 'curl', pid: 79 }, order);
      return client;
    };
    expect(await cipherThrough(await adoptedClient('chacha20-first'))).toBe('TLS_CHACHA20_POLY1305_SHA256');
    expect(await cipherThrough(await adoptedClient('aes-gcm-first'))).toBe('TLS_AES_128_GCM_SHA256');
    expect(await cipherThrough(connect(proxy.port, '127.0.0.1'))).toBe('TLS_AES_128_GCM_SHA256');
    pair.close();
  });
});
