import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Server } from 'node:net';
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
// and http.request without an agent, got (on https.request), and ws given Node's global agents
// (ws:// and wss://) go through the proxy and are recorded; NO_PROXY, a unix socket and a request
// made to the proxy by hand still go where they were sent.

const TLS_HOST = 'api.node-client.example';
const PLAIN_HOST = 'plain.node-client.example';
const WS_HOST = 'ws.node-client.example';
const WSS_HOST = 'wss.node-client.example';
const require = createRequire(import.meta.url);
const home = tempHome();
const upstreamHome = tempHome();
const socketDir = mkdtempSync(join(tmpdir(), 'capsem-sock-'));
const SOCKET_PATH = join(socketDir, 'daemon.sock');
let upstream: Upstream;
const servers: Server[] = [];
const plainRequests: { path: string; body: string; proxyAuthorization: string | undefined }[] = [];
let localHits = 0;
let result: CliResult;
let answers: Record<string, { status?: number; body?: string; error?: string }>;

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
  it('send https.request, http.request, got and ws (with the global agent) through the proxy, recorded', () => {
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).not.toMatch(/warning|error/i);
    expect(answers.https).toEqual({ status: 200, body: JSON.stringify({ path: '/v1/https-request' }) });
    expect(answers.http).toEqual({ status: 200, body: 'plain:/v1/http-request:' });
    expect(answers.rawHeaders).toEqual({ status: 200, body: 'plain:/v1/raw-headers:kept' });
    expect(answers.got).toEqual({ status: 200, body: JSON.stringify({ path: '/v1/got' }) });
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
});
