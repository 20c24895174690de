import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectFloodsRefused, floodAnswers, floodScript, HTTP2_FLOOD } from '../helpers/http2Floods.ts';
import { json, startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsem, runCapsemAsync, spawnCapsem, type CliResult } from '../helpers/runCapsem.ts';
import { rssOf, watchRss } from '../helpers/rssWatch.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Clients that speak HTTP/2, through the real `capsem record` run from a user's folder: a Node
// program on node:http2 that offers only h2 inside its tunnels, and curl, which speaks h2 when TLS
// chooses it (--http2) or from a plain tunnel's first bytes (--http2-prior-knowledge). Their
// requests are admitted, checked, forwarded and recorded as HTTP/1.1's are.

const CLIENT = fileURLToPath(new URL('../fixtures/http2Client.mjs', import.meta.url));
const API = 'api.anthropic.com';
const FLOOD_HOST = 'flood.h2.test';
const home = tempHome();
const upstreamHome = tempHome();
let upstream: Upstream;
let plain: Server;
const plainHits: string[] = [];
let node: CliResult;
let curl: CliResult;
let env: Record<string, string>;
let answers: { label: string; alpn?: string; status?: number | string; body?: string; streamed?: boolean; error?: string }[];
const MESSAGE = {
  id: 'msg_h2',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-20250514',
  content: [{ type: 'text', text: 'hello over h2' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 12, output_tokens: 3 },
};

function rows<T>(name: string, sql: string, ...params: unknown[]): T[] {
  const { id } = (JSON.parse(runCapsem(home.root, ['list', '--json']).stdout) as { id: string; name: string }[]).find(
    (s) => s.name === name,
  )!;
  return sessionRows<T>(`${home.root}/run/sessions/${id}/session.db`, sql, ...params);
}
const answer = (label: string): (typeof answers)[number] | undefined => answers.find((a) => a.label === label);

beforeAll(async () => {
  let releaseStream: ServerResponse | null = null;
  upstream = await startUpstream(upstreamHome, [API, FLOOD_HOST], (req, body, res) => {
    const path = req.url ?? '';
    if (path === '/h2/sse') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      releaseStream = res;
      return;
    }
    if (path === '/h2/release') {
      releaseStream?.end('data: last\n\n');
      return json(res, 200, { released: true });
    }
    if (path === '/v1/messages') return json(res, 200, MESSAGE);
    json(res, 200, { path, method: req.method, got: body });
  });
  plain = createHttpServer((req, res) => {
    plainHits.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`plain answer to ${req.url}`);
  });
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  const caFile = `${upstreamHome.root}/upstream-ca.pem`;
  writeFileSync(caFile, upstream.caPem);
  env = {
    CAPSEM_RESOLVE: `${API}:443=127.0.0.1:${upstream.port},${FLOOD_HOST}:443=127.0.0.1:${upstream.port},plain.test:8080=127.0.0.1:${(plain.address() as AddressInfo).port}`,
    CAPSEM_UPSTREAM_CA_FILE: caFile,
  };
  const tunnel = `${API}:443`;
  const asks = [
    { label: 'get', tunnel, headers: { ':method': 'GET', ':path': '/h2/get?x=1' } },
    { label: 'post', tunnel, headers: { ':method': 'POST', ':path': '/h2/post', 'content-type': 'text/plain' }, body: 'hello over h2' },
    { label: 'sse', tunnel, headers: { ':method': 'GET', ':path': '/h2/sse', accept: 'text/event-stream' }, release: '/h2/release' },
    {
      label: 'model call',
      tunnel,
      headers: { ':method': 'POST', ':path': '/v1/messages', 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'claude-sonnet-4-20250514', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }),
    },
    { label: 'another authority', tunnel, headers: { ':method': 'GET', ':path': '/h2/fronted', ':authority': 'files.guest-test.example' } },
    {
      label: 'another host beside the authority',
      tunnel,
      headers: { ':method': 'GET', ':path': '/h2/fronted-by-host', ':authority': API, host: 'files.guest-test.example' },
    },
    { label: 'private', tunnel: '127.0.0.1:443', headers: { ':method': 'GET', ':path': '/h2/private' } },
  ];
  node = await runCapsemAsync(
    home.root,
    ['record', '--name', 'node-h2', '--', process.execPath, CLIENT],
    { ...env, ASKS: JSON.stringify(asks), PREFACE_TO_PROXY: '1' },
    { timeoutMs: 60_000 },
  );
  answers = JSON.parse(node.stdout.trim().split('\n').at(-1) ?? '[]') as typeof answers;
  const script = [
    `curl --http2 -sS -w '\\nversion %{http_version}\\n' -H 'content-type: text/plain' --data-binary 'from curl' https://${API}/curl-h2`,
    "curl --http2-prior-knowledge --proxytunnel -sS -w '\\nversion %{http_version}\\n' http://plain.test:8080/h2c",
  ].join('; ');
  curl = await runCapsemAsync(home.root, ['record', '--name', 'curl-h2', '--', 'sh', '-c', script], env, { timeoutMs: 60_000 });
}, 150_000);

afterAll(async () => {
  await upstream.close();
  plain.close();
  home.remove();
  upstreamHome.remove();
});

describe('HTTP/2 clients through capsem record', () => {
  it('serves a Node client that offers only h2, and records each request with its bodies as an HTTP/1.1 request is', () => {
    expect(node.code, node.stderr).toBe(0);
    expect(answers.filter((a) => ['get', 'post'].includes(a.label))).toEqual([
      { label: 'get', alpn: 'h2', status: 200, body: JSON.stringify({ path: '/h2/get?x=1', method: 'GET', got: '' }) },
      { label: 'post', alpn: 'h2', status: 200, body: JSON.stringify({ path: '/h2/post', method: 'POST', got: 'hello over h2' }) },
    ]);
    const recorded = rows<{
      path: string;
      query: string | null;
      method: string;
      status_code: number;
      decision: string;
      conn_type: string;
      process_name: string;
      request_headers: string;
      sent: string | null;
      received: string;
    }>(
      'node-h2',
      "SELECT n.path, n.query, n.method, n.status_code, n.decision, n.conn_type, n.process_name, n.request_headers, q.body AS sent, r.body AS received FROM net_events n LEFT JOIN event_body_blobs q ON q.event_id = n.event_id AND q.direction = 'request' JOIN event_body_blobs r ON r.event_id = n.event_id AND r.direction = 'response' WHERE n.path IN ('/h2/get', '/h2/post') ORDER BY n.seq",
    );
    expect(
      recorded.map((r) => [
        r.path,
        r.query,
        r.method,
        r.status_code,
        r.decision,
        r.conn_type,
        r.process_name,
        r.sent && String(r.sent),
        String(r.received),
      ]),
    ).toEqual([
      ['/h2/get', 'x=1', 'GET', 200, 'allowed', 'https', 'node', null, answer('get')!.body],
      ['/h2/post', null, 'POST', 200, 'allowed', 'https', 'node', 'hello over h2', answer('post')!.body],
    ]);
    // The headers are recorded as HTTP/1.1 carries them: the host it named, no pseudo-headers.
    const headers = JSON.parse(recorded[1]!.request_headers) as Record<string, string>;
    expect(headers).toMatchObject({ host: `${API}:443`, 'content-type': 'text/plain' });
    expect(Object.keys(headers).filter((k) => k.startsWith(':'))).toEqual([]);
  });

  it('streams an SSE response to the HTTP/2 client as it arrives, and records all of it', () => {
    expect(answer('sse')).toEqual({ label: 'sse', alpn: 'h2', status: 200, body: 'data: first\n\ndata: last\n\n', streamed: true });
    expect(
      rows<{ status_code: number; body: string }>(
        'node-h2',
        "SELECT n.status_code, b.body FROM net_events n JOIN event_body_blobs b ON b.event_id = n.event_id AND b.direction = 'response' WHERE n.path = '/h2/sse'",
      ).map((r) => [r.status_code, String(r.body)]),
    ).toEqual([[200, 'data: first\n\ndata: last\n\n']]);
  });

  it('records a model API call made over HTTP/2 in model_calls', () => {
    expect(answer('model call')).toMatchObject({ status: 200, body: JSON.stringify(MESSAGE) });
    expect(
      rows('node-h2', 'SELECT provider, model, status_code, text_content, input_tokens, output_tokens, stop_reason FROM model_calls'),
    ).toEqual([
      {
        provider: 'anthropic',
        model: 'claude-sonnet-4-20250514',
        status_code: 200,
        text_content: 'hello over h2',
        input_tokens: 12,
        output_tokens: 3,
        stop_reason: 'end_turn',
      },
    ]);
  });

  it('refuses an :authority that names another host than the tunnel (421) and a private destination (403), records both, and forwards neither', () => {
    expect(answer('another authority')).toMatchObject({
      status: 421,
      body: expect.stringMatching(/:authority files\.guest-test\.example is not this request's destination api\.anthropic\.com/),
    });
    expect(answer('another host beside the authority')).toMatchObject({
      status: 421,
      body: expect.stringMatching(/Host files\.guest-test\.example is not this request's destination api\.anthropic\.com/),
    });
    expect(answer('private')).toMatchObject({
      status: 403,
      body: expect.stringMatching(/blocked by policy rule default\.deny-private-address/),
    });
    expect(
      rows(
        'node-h2',
        "SELECT domain, path, status_code, decision, error_kind, matched_rule FROM net_events WHERE path IN ('/h2/fronted', '/h2/fronted-by-host', '/h2/private') ORDER BY seq",
      ),
    ).toEqual([
      {
        domain: API,
        path: '/h2/fronted',
        status_code: 421,
        decision: 'denied',
        error_kind: 'misdirected_request',
        matched_rule: 'proxy.bad-request',
      },
      {
        domain: API,
        path: '/h2/fronted-by-host',
        status_code: 421,
        decision: 'denied',
        error_kind: 'misdirected_request',
        matched_rule: 'proxy.bad-request',
      },
      {
        domain: '127.0.0.1',
        path: '/h2/private',
        status_code: 403,
        decision: 'denied',
        error_kind: 'destination_private',
        matched_rule: 'default.deny-private-address',
      },
    ]);
    expect(upstream.requests.map((r) => r.path).filter((p) => p.startsWith('/h2/fronted'))).toEqual([]);
  });

  it('records HTTP/2 spoken to the proxy itself, outside a tunnel, as refused, saying why', () => {
    expect(answer('preface to the proxy')).toEqual({ label: 'preface to the proxy', status: 'HTTP/1.1 400 Bad Request' });
    expect(
      rows('node-h2', "SELECT status_code, decision, error_message FROM net_events WHERE matched_rule = 'proxy.malformed-request'"),
    ).toEqual([
      {
        status_code: 400,
        decision: 'denied',
        error_message: expect.stringMatching(/^HTTP\/2 where HTTP\/1\.1 was due: HTTP\/2 is served inside a CONNECT tunnel/),
      },
    ]);
  });

  it('speaks h2 with curl, chosen by TLS or by prior knowledge in a plain tunnel, and records both requests', () => {
    expect(curl.code, curl.stderr).toBe(0);
    expect(curl.stdout.match(/^version .*$/gm)).toEqual(['version 2', 'version 2']);
    expect(curl.stdout).toContain('plain answer to /h2c');
    expect(plainHits).toEqual(['/h2c']);
    const recorded = rows<{ domain: string; path: string; method: string; status_code: number; conn_type: string; sent: string | null }>(
      'curl-h2',
      "SELECT n.domain, n.path, n.method, n.status_code, n.conn_type, q.body AS sent FROM net_events n LEFT JOIN event_body_blobs q ON q.event_id = n.event_id AND q.direction = 'request' ORDER BY n.seq",
    );
    expect(recorded.map((r) => [r.domain, r.path, r.method, r.status_code, r.conn_type, r.sent && String(r.sent)])).toEqual([
      [API, '/curl-h2', 'POST', 200, 'https', 'from curl'],
      ['plain.test', '/h2c', 'GET', 200, 'http', null],
    ]);
  });
});

describe('an HTTP/2 client past the limits, through capsem record', () => {
  it("is refused (5,000 streams at once, 8 MiB header lists by CONTINUATION and by HPACK's table), each refusal recorded, the proxy's memory bounded, and the next connection served", async () => {
    const child = spawnCapsem(
      home.root,
      ['record', '--name', 'h2-flood', '--', 'sh', '-c', floodScript(process.execPath, HTTP2_FLOOD, `${FLOOD_HOST}:443`)],
      env,
    );
    let stdout = '';
    let stderr = '';
    let watch: ReturnType<typeof watchRss> | null = null;
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      // The capsem process holds the proxy: its memory from the moment the first flood starts.
      watch ??= stderr.includes('flooding: ') ? watchRss(() => rssOf(child.pid!)) : null;
    });
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    const grewMiB = watch!.stop();
    expect(code, stderr).toBe(0);
    expectFloodsRefused(
      floodAnswers(stdout),
      rows<{ error_message: string }>(
        'h2-flood',
        "SELECT error_message FROM net_events WHERE matched_rule = 'proxy.http2-limits' ORDER BY seq",
      ).map((r) => r.error_message),
      upstream.requests.map((r) => r.path),
    );
    expect(
      rows('h2-flood', "SELECT DISTINCT domain, decision, process_name FROM net_events WHERE matched_rule = 'proxy.http2-limits'"),
    ).toEqual([{ domain: FLOOD_HOST, decision: 'denied', process_name: 'sh' }]);
    // Measured: 34.6-34.9 MiB (a proxy that kept the streams or the header lists would grow past it).
    expect(grewMiB, `capsem record's RSS grew ${grewMiB.toFixed(1)} MiB under the floods`).toBeLessThan(64);
  }, 120_000);
});
