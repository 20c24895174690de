import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { createServer as createNetServer, type Server } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { CertificateAuthority } from '../../electron/proxy/certificateAuthority.ts';
import { json, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsem, runCapsemAsync, type CliResult } from '../helpers/runCapsem.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Node programs that ignore HTTPS_PROXY, run by `capsem record` from a user's folder: https.request
// and http.request without an agent or with `agent: false`, got (on https.request), ws given Node's
// global agents (ws:// and wss://), and fetch and https.get in worker threads of every kind (code
// given as a string, an ES module, an environment of their own, the shared one) go through the
// proxy and are recorded; NO_PROXY, a unix socket and a request made to the proxy by hand still go
// where they were sent.

const TLS_HOST = 'api.node-client.example';
const PLAIN_HOST = 'plain.node-client.example';
const WS_HOST = 'ws.node-client.example';
const WSS_HOST = 'wss.node-client.example';
const require = createRequire(import.meta.url);
/** The worker threads PROGRAM starts, in its order. */
const WORKER_KINDS = ['eval', 'module', 'own-env', 'shared-env'];
const home = tempHome();
const upstreamHome = tempHome();
const socketDir = mkdtempSync(join(tmpdir(), 'capsem-sock-'));
const SOCKET_PATH = join(socketDir, 'daemon.sock');
let upstream: Upstream;
const servers: Server[] = [];
const plainRequests: { path: string; body: string; proxyAuthorization: string | undefined }[] = [];
let localHits = 0;
/** What reached the server on 127.0.0.1 around the proxy: the first line of each connection. */
const directLines: string[] = [];
let result: CliResult;
type Answer = { status?: number; body?: string; error?: string };
let answers: Record<string, Answer> & { workers?: Record<string, { fetched: Answer; got: Answer }> };

/** Listens on host (port 0), or on a unix socket path; resolves with the port, 0 for a socket. */
function listen(server: Server, where: { host: string } | { path: string }): Promise<number> {
  servers.push(server);
  return new Promise((resolve) =>
    server.listen('path' in where ? where.path : { port: 0, host: where.host }, () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : 0);
    }),
  );
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => resolve(body));
  });
}

const PROGRAM = `
import http from 'node:http';
import https from 'node:https';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
/** The worker threads PROGRAM starts, in its order. */
const WORKER_KINDS = ['eval', 'module', 'own-env', 'shared-env'];
const got = require(process.env.GOT_PATH);
const WebSocket = require(process.env.WS_PATH);

function call(mod, url, options = {}, body) {
  return new Promise((resolve) => {
    const respond = (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, body: text }));
    };
    const req = typeof url === 'string' ? mod.request(url, options, respond) : mod.request(url, respond);
    req.on('error', (err) => resolve({ error: err.message }));
    req.end(body);
  });
}

const proxy = new URL(process.env.HTTPS_PROXY);
const answers = {};
answers.https = await call(https, 'https://${TLS_HOST}/v1/https-request');
answers.http = await call(http, 'http://${PLAIN_HOST}/v1/http-request', { method: 'POST', headers: { 'content-type': 'application/json' } }, '{"n":1}');
// Headers given as an array are written out when the request is made, before any agent sees it.
answers.rawHeaders = await call(http, 'http://${PLAIN_HOST}/v1/raw-headers', { method: 'POST', headers: ['Host', '${PLAIN_HOST}', 'Content-Type', 'text/plain', 'X-Order', 'kept'] }, 'raw');
answers.got = await got('https://${TLS_HOST}/v1/got').then((r) => ({ status: r.statusCode, body: r.body }), (e) => ({ error: e.message }));
// A fresh agent of the global agent's class, made with no options.
answers.agentFalse = await call(https, 'https://${TLS_HOST}/v1/agent-false', { agent: false });

const { Worker, SHARE_ENV } = await import('node:worker_threads');
// Each thread has its own fetch dispatcher and global agents: what routes the main thread's must run in each.
const WORKER = \`
const https = process.getBuiltinModule('node:https');
const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
const get = (url) => new Promise((resolve) => https.get(url, (res) => {
  let body = '';
  res.on('data', (c) => (body += c));
  res.on('end', () => resolve({ status: res.statusCode, body }));
}).on('error', (e) => resolve({ error: e.message })));
const fetched = fetch('https://${TLS_HOST}/v1/worker-fetch/' + workerData)
  .then(async (r) => ({ status: r.status, body: await r.text() }), (e) => ({ error: e.message }));
fetched.then(async (fetched) => parentPort.postMessage({ fetched, got: await get('https://${TLS_HOST}/v1/worker-https-get/' + workerData) }));
\`;
const WORKERS = {
  eval: [WORKER, { eval: true }],
  module: [new URL('data:text/javascript,' + encodeURIComponent(WORKER)), {}],
  'own-env': [WORKER, { eval: true, env: { PATH: process.env.PATH } }],
  'shared-env': [WORKER, { eval: true, env: SHARE_ENV }],
};
answers.workers = {};
for (const [kind, [code, options]] of Object.entries(WORKERS)) {
  answers.workers[kind] = await new Promise((resolve) => {
    const worker = new Worker(code, { ...options, workerData: kind });
    worker.once('message', resolve);
    worker.once('error', (e) => resolve({ error: e.message }));
  });
}
answers.ws = await new Promise((resolve) => {
  const ws = new WebSocket('ws://${WS_HOST}/chat', { agent: http.globalAgent });
  ws.on('open', () => ws.send('hello'));
  ws.on('message', (m) => { ws.close(); resolve({ status: 101, body: m.toString() }); });
  ws.on('error', (e) => resolve({ error: e.message }));
});
answers.wss = await new Promise((resolve) => {
  const ws = new WebSocket('wss://${WSS_HOST}/chat', { agent: https.globalAgent });
  ws.on('open', () => ws.send('hello'));
  ws.on('message', (m) => { ws.close(); resolve({ status: 101, body: m.toString() }); });
  ws.on('error', (e) => resolve({ error: e.message }));
});
answers.noProxy = await call(http, 'http://localhost:' + process.env.LOCAL_PORT + '/direct');
answers.unixSocket = await call(http, { socketPath: process.env.SOCKET_PATH, path: '/ping' });
answers.byHand = await call(http, { host: proxy.hostname, port: proxy.port, path: 'http://${PLAIN_HOST}/v1/by-hand', headers: {
  host: '${PLAIN_HOST}', 'proxy-authorization': 'Basic ' + Buffer.from(proxy.username + ':' + proxy.password).toString('base64'),
} });

// What README and SECURITY.md list as not recorded: each aims at a server on 127.0.0.1, which the
// proxy's policy refuses, so only a connection that went around the proxy reaches it.
const direct = 'http://127.0.0.1:' + process.env.DIRECT_PORT;
const settled = (work) => Promise.race([work.then(() => 'done', (e) => e.message), new Promise((r) => setTimeout(() => r('timeout'), 5000))]);
const undici = require(process.env.UNDICI_PATH);
const http2 = await import('node:http2');
const net = await import('node:net');
const { execFile } = await import('node:child_process');
await settled(new Promise((resolve, reject) => {
  const session = http2.connect(direct);
  session.on('error', reject);
  session.request({ ':path': '/direct/http2' }).on('response', resolve).on('error', reject).end();
}));
await settled(new undici.Client(direct).request({ method: 'GET', path: '/direct/undici-client' }).then((r) => r.body.text()));
await settled(fetch(direct + '/direct/undici-agent', { dispatcher: new undici.Agent() }).then((r) => r.text()));
await settled(call(http, direct + '/direct/own-agent', { agent: new http.Agent() }));
await settled(new Promise((resolve, reject) => {
  const socket = net.connect(Number(process.env.DIRECT_PORT), '127.0.0.1', () => socket.write('GET /direct/raw-socket HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'));
  socket.on('data', () => resolve(socket.destroy())).on('error', reject);
}));
await settled(new Promise((resolve, reject) => {
  const ws = new WebSocket('ws://127.0.0.1:' + process.env.DIRECT_PORT + '/direct/ws-no-agent');
  ws.on('unexpected-response', resolve).on('error', reject);
}));
await settled(new Promise((resolve) => execFile(process.execPath, ['-e', "fetch(process.argv[1]).then((r) => r.text())", direct + '/direct/child-own-env'], { env: { PATH: process.env.PATH } }, resolve)));
process.env.NO_PROXY = process.env.no_proxy = '127.0.0.1';
await settled(fetch(direct + '/direct/no-proxy-set-by-program').then((r) => r.text()));
console.log(JSON.stringify(answers));
`;

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, [TLS_HOST], (req, _body, res) => json(res, 200, { path: req.url }));
  const caFile = `${upstreamHome.root}/upstream-ca.pem`;
  writeFileSync(caFile, upstream.caPem);
  const plainPort = await listen(
    createServer(
      (req, res) =>
        void readBody(req).then((body) => {
          plainRequests.push({ path: req.url ?? '', body, proxyAuthorization: req.headers['proxy-authorization'] });
          res.end(`plain:${req.url}:${req.headers['x-order'] ?? ''}`);
        }),
    ),
    { host: '127.0.0.1' },
  );
  const wsServer = createServer();
  new WebSocketServer({ server: wsServer }).on('connection', (ws) => ws.on('message', (m) => ws.send(`echo:${m.toString()}`)));
  const wsPort = await listen(wsServer, { host: '127.0.0.1' });
  const leaf = await (await CertificateAuthority.load(upstreamHome)).issueLeaf(WSS_HOST);
  const wssServer = createTlsServer({ cert: leaf.certPem + upstream.caPem, key: leaf.keyPem });
  new WebSocketServer({ server: wssServer }).on('connection', (ws) => ws.on('message', (m) => ws.send(`secure:${m.toString()}`)));
  const wssPort = await listen(wssServer, { host: '127.0.0.1' });
  const localPort = await listen(
    createServer((req, res) => {
      localHits += 1;
      res.end('local');
    }),
    { host: 'localhost' },
  );
  await listen(
    createServer((req, res) => res.end('pong')),
    { path: SOCKET_PATH },
  );
  const directPort = await listen(
    createNetServer((socket) => {
      socket.once('data', (c: Buffer) => {
        directLines.push(c.toString('latin1').split('\r\n')[0]!);
        socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      });
      socket.on('error', () => undefined);
    }),
    { host: '127.0.0.1' },
  );
  const script = `${upstreamHome.root}/client.mjs`;
  writeFileSync(script, PROGRAM);
  result = await runCapsemAsync(
    home.root,
    ['record', '--name', 'node-http', '--', process.execPath, script],
    {
      CAPSEM_RESOLVE: `${TLS_HOST}:443=127.0.0.1:${upstream.port},${PLAIN_HOST}:80=127.0.0.1:${plainPort},${WS_HOST}:80=127.0.0.1:${wsPort},${WSS_HOST}:443=127.0.0.1:${wssPort}`,
      CAPSEM_UPSTREAM_CA_FILE: caFile,
      NO_PROXY: 'localhost',
      GOT_PATH: require.resolve('got'),
      WS_PATH: pathToFileURL(require.resolve('ws')).pathname,
      LOCAL_PORT: String(localPort),
      DIRECT_PORT: String(directPort),
      UNDICI_PATH: require.resolve('undici'),
      SOCKET_PATH,
    },
    { timeoutMs: 60_000 },
  );
  const last = result.stdout.trim().split('\n').at(-1) ?? '';
  answers = last.startsWith('{') ? (JSON.parse(last) as typeof answers) : {};
}, 90_000);

afterAll(async () => {
  await upstream.close();
  for (const server of servers) server.close();
  home.remove();
  upstreamHome.remove();
  rmSync(socketDir, { recursive: true, force: true });
});

function rows<T>(sql: string): T[] {
  const id = (JSON.parse(runCapsem(home.root, ['list', '--json']).stdout) as { id: string }[])[0]!.id;
  return sessionRows<T>(`${home.root}/run/sessions/${id}/session.db`, sql);
}

describe('Node programs that ignore HTTPS_PROXY, under capsem record', () => {
  it('send https.request, http.request, got, ws (with the global agent) and worker threads through the proxy, recorded', () => {
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toMatch(/warning|error/i);
    expect(answers.https).toEqual({ status: 200, body: JSON.stringify({ path: '/v1/https-request' }) });
    expect(answers.http).toEqual({ status: 200, body: 'plain:/v1/http-request:' });
    expect(answers.rawHeaders).toEqual({ status: 200, body: 'plain:/v1/raw-headers:kept' });
    expect(answers.got).toEqual({ status: 200, body: JSON.stringify({ path: '/v1/got' }) });
    expect(answers.agentFalse).toEqual({ status: 200, body: JSON.stringify({ path: '/v1/agent-false' }) });
    expect(answers.workers).toEqual(
      Object.fromEntries(
        WORKER_KINDS.map((kind) => [
          kind,
          {
            fetched: { status: 200, body: JSON.stringify({ path: `/v1/worker-fetch/${kind}` }) },
            got: { status: 200, body: JSON.stringify({ path: `/v1/worker-https-get/${kind}` }) },
          },
        ]),
      ),
    );
    expect(answers.ws).toEqual({ status: 101, body: 'echo:hello' });
    expect(answers.wss).toEqual({ status: 101, body: 'secure:hello' });
    // The proxy's credentials are for the proxy: the upstream never sees them.
    expect(plainRequests.filter((r) => r.proxyAuthorization !== undefined)).toEqual([]);
    expect(plainRequests.find((r) => r.path === '/v1/http-request')?.body).toBe('{"n":1}');
    const recorded = rows<{ domain: string; method: string; path: string; status_code: number; decision: string }>(
      'SELECT domain, method, path, status_code, decision FROM net_events ORDER BY seq',
    );
    expect(recorded).toEqual([
      { domain: TLS_HOST, method: 'GET', path: '/v1/https-request', status_code: 200, decision: 'allowed' },
      { domain: PLAIN_HOST, method: 'POST', path: '/v1/http-request', status_code: 200, decision: 'allowed' },
      { domain: PLAIN_HOST, method: 'POST', path: '/v1/raw-headers', status_code: 200, decision: 'allowed' },
      { domain: TLS_HOST, method: 'GET', path: '/v1/got', status_code: 200, decision: 'allowed' },
      { domain: TLS_HOST, method: 'GET', path: '/v1/agent-false', status_code: 200, decision: 'allowed' },
      ...WORKER_KINDS.flatMap((kind) => [
        { domain: TLS_HOST, method: 'GET', path: `/v1/worker-fetch/${kind}`, status_code: 200, decision: 'allowed' },
        { domain: TLS_HOST, method: 'GET', path: `/v1/worker-https-get/${kind}`, status_code: 200, decision: 'allowed' },
      ]),
      { domain: WS_HOST, method: 'GET', path: '/chat', status_code: 101, decision: 'allowed' },
      { domain: WSS_HOST, method: 'GET', path: '/chat', status_code: 101, decision: 'allowed' },
      { domain: PLAIN_HOST, method: 'GET', path: '/v1/by-hand', status_code: 200, decision: 'allowed' },
    ]);
    expect(rows("SELECT direction, content FROM ws_frames WHERE opcode = 'text' ORDER BY id")).toEqual([
      { direction: 'sent', content: 'hello' },
      { direction: 'received', content: 'echo:hello' },
      { direction: 'sent', content: 'hello' },
      { direction: 'received', content: 'secure:hello' },
    ]);
  });

  it('leave NO_PROXY hosts, unix sockets and requests made to the proxy by hand where they were sent', () => {
    expect(answers.noProxy).toEqual({ status: 200, body: 'local' });
    expect(localHits).toBe(1);
    expect(answers.unixSocket).toEqual({ status: 200, body: 'pong' });
    expect(answers.byHand).toEqual({ status: 200, body: 'plain:/v1/by-hand:' });
    expect(result.stderr).toMatch(/capsem record: NO_PROXY=localhost: requests to these hosts go directly and are not recorded/);
  });

  it('leave what README lists as not recorded going around the proxy: http2, undici with its own dispatcher, an agent of its own, raw sockets, ws without an agent, a child given an environment of its own, NO_PROXY set by the program', () => {
    expect(directLines).toEqual([
      'PRI * HTTP/2.0',
      'GET /direct/undici-client HTTP/1.1',
      'GET /direct/undici-agent HTTP/1.1',
      'GET /direct/own-agent HTTP/1.1',
      'GET /direct/raw-socket HTTP/1.1',
      'GET /direct/ws-no-agent HTTP/1.1',
      'GET /direct/child-own-env HTTP/1.1',
      'GET /direct/no-proxy-set-by-program HTTP/1.1',
    ]);
  });
});
