import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportAll, filesUnder, keyOfLength, sessionApiAnswers, tracesIn, tracesInFiles } from '../helpers/keyTraces.ts';
import { startUpstream, type Upstream } from '../helpers/mockUpstreams.ts';
import { runCapsem, runCapsemAsync, type CliResult } from '../helpers/runCapsem.ts';
import { sessionRows } from '../helpers/sessionRows.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { writeHomePolicy } from '../helpers/homePolicy.ts';

// Keys never come back, through the real `capsem record` run from a user's folder. The provider's
// API here reflects whatever it receives: the request's headers, URL and body, in its body, the
// status line, Location, Set-Cookie and a header's name, gzip/br/deflate-compressed, base64,
// base64url and URL-encoded, as an SSE stream cut into 7-byte writes, over HTTP/2, and in WebSocket
// frames (a message fragmented mid-key, a ping, a binary frame, the close reason). The program
// (test/fixtures/keyReflections.mjs) holds stand-ins: every reflection reaches it with the stand-in
// where the key was, and no trace of a real key is in its output, in any file under CAPSEM_HOME
// (read raw, before any database is opened), in any export or in `capsem api`'s answers. The
// stand-in sent over plain HTTP (absolute-form, plain tunnels, h2c, a plain WebSocket) or to
// another port is refused and recorded, never substituted; one hidden in a compressed body, far
// into a body or in a body that cannot be read is refused on its way elsewhere; and each refused
// absolute-form http:// request is recorded as http with its path and query apart.

const FIXTURE = fileURLToPath(new URL('../fixtures/keyReflections.mjs', import.meta.url));
const home = tempHome();
const upstreamHome = tempHome();
const exportsDir = mkdtempSync(join(tmpdir(), 'capsem-reflections-exports-'));
const REAL = {
  anthropic: keyOfLength('sk-ant-api03-', 108, 'AA'),
  gemini: keyOfLength('AIza', 39),
  // A key a URL must escape: its percent-encoded reflection is longer than the key.
  acme: `acme+REAL/${randomBytes(36).toString('base64')}=`,
};
const PROVIDER_HOSTS = ['api.anthropic.com', 'generativelanguage.googleapis.com', 'api.acme.test', 'elsewhere.example'];

let upstream: Upstream;
let plain: Server;
const plainHits: string[] = [];
let run: CliResult;
/** What the program got back, per request. */
let got: Record<string, { status?: number; reason?: string; headers?: Record<string, unknown>; body?: string; error?: string }> & {
  websocket?: { upgrade: { reason: string; headers: Record<string, string> }; messages: string[]; pings: string[]; close: string };
  'websocket declined'?: { status: number; reason: string; headers: Record<string, string>; body: string };
};
let standIn: Record<'anthropic' | 'gemini' | 'acme', string>;
/** The raw files under CAPSEM_HOME as they were when capsem record exited, before anything opened them. */
let rawLeaks: string[];
let sessionId: string;

/** The key the reflecting upstream received, wherever the client put it. */
function keyIn(req: IncomingMessage): string {
  const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''));
  const query = new URL(req.url ?? '/', 'https://x').searchParams.get('key');
  return String(req.headers['x-api-key'] ?? req.headers['x-goog-api-key'] ?? req.headers['x-acme-key'] ?? bearer?.[1] ?? query ?? '');
}

function reflectionOf(req: IncomingMessage, body: unknown): string {
  return JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body });
}

function reflect(req: IncomingMessage, body: unknown, res: ServerResponse): void {
  const key = keyIn(req);
  const text = reflectionOf(req, body);
  const path = new URL(req.url ?? '/', 'https://x').pathname;
  const send = (status: number, headers: Record<string, string | string[]>, payload: string | Buffer): void => {
    res.writeHead(status, headers);
    res.end(payload);
  };
  switch (path) {
    case '/echo':
      res.statusMessage = `OK ${key}`;
      res.setHeader('x-echo', key);
      res.setHeader('set-cookie', [`k=${key}`, `u=${encodeURIComponent(key)}`]);
      if (/^[A-Za-z0-9_-]+$/.test(key)) res.setHeader(`x-${key}`, '1');
      return send(200, { 'content-type': 'application/json' }, text);
    case '/length':
      return send(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) }, text);
    case '/redirect':
      return send(302, { location: `https://generativelanguage.googleapis.com/next?key=${encodeURIComponent(key)}&again=${key}` }, text);
    case '/gzip':
      return send(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }, gzipSync(text));
    case '/br':
      return send(200, { 'content-type': 'application/json', 'content-encoding': 'br' }, brotliCompressSync(text));
    case '/deflate':
      return send(200, { 'content-type': 'application/json', 'content-encoding': 'deflate' }, deflateSync(text));
    case '/encoded': {
      const lines = ['', 'a', 'ab'].flatMap((pad) => [
        Buffer.from(pad + text).toString('base64'),
        Buffer.from(pad + text).toString('base64url'),
      ]);
      return send(200, { 'content-type': 'text/plain' }, [...lines, encodeURIComponent(text)].join('\n'));
    }
    case '/sse': {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const stream = Buffer.from(`event: echo\ndata: ${text}\n\ndata: ${key}\n\n`);
      let at = 0;
      const next = (): void => {
        if (at >= stream.length) return void res.end();
        res.write(stream.subarray(at, (at += 7)));
        setTimeout(next, 1);
      };
      return next();
    }
    case '/unknown-coding':
      return send(200, { 'content-type': 'text/plain', 'content-encoding': 'x-custom' }, text);
    case '/trailer':
      res.writeHead(200, { 'content-type': 'text/plain', trailer: 'x-key' });
      res.write(text);
      res.addTrailers({ 'x-key': key });
      return void res.end();
    default:
      return send(200, { 'content-type': 'application/json' }, text);
  }
}

function wsFrame(fin: boolean, opcode: number, payload: Buffer): Buffer {
  const head =
    payload.length < 126
      ? Buffer.from([(fin ? 0x80 : 0) | opcode, payload.length])
      : Buffer.from([(fin ? 0x80 : 0) | opcode, 126, payload.length >> 8, payload.length & 0xff]);
  return Buffer.concat([head, payload]);
}

/** A WebSocket server that reflects the upgrade request in its head and in every kind of frame. */
function reflectUpgrade(req: IncomingMessage, socket: Duplex): void {
  const key = keyIn(req);
  if (req.url === '/ws-declined') {
    // Not switched: an ordinary answer to the upgrade, gzip-compressed, quoting the request.
    const body = gzipSync(reflectionOf(req, ''));
    return void socket.end(
      `HTTP/1.1 401 Unauthorized ${key}\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: ${body.length}\r\nx-echo: ${key}\r\n\r\n${body.toString('latin1')}`,
      'latin1',
    );
  }
  const accept = createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
  socket.on('error', () => undefined);
  socket.write(
    `HTTP/1.1 101 Switching ${key}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\nx-echo: ${key}\r\n\r\n`,
  );
  const half = Math.floor(key.length / 2);
  socket.write(
    Buffer.concat([
      wsFrame(true, 1, Buffer.from(reflectionOf(req, ''))),
      // A message fragmented in the middle of the key, with a ping carrying it in between.
      wsFrame(false, 1, Buffer.from(`part one ${key.slice(0, half)}`)),
      wsFrame(true, 9, Buffer.from(key)),
      wsFrame(true, 0, Buffer.from(`${key.slice(half)} part two`)),
      wsFrame(true, 2, Buffer.from(Buffer.from(key).toString('base64'))),
      wsFrame(true, 8, Buffer.concat([Buffer.from([0x03, 0xe8]), Buffer.from(key)])),
    ]),
  );
  setTimeout(() => socket.destroy(), 300);
}

beforeAll(async () => {
  upstream = await startUpstream(upstreamHome, PROVIDER_HOSTS, reflect, { onUpgrade: reflectUpgrade });
  plain = createHttpServer((req, res) => {
    plainHits.push(`${req.headers.host}${req.url}`);
    res.end(reflectionOf(req, ''));
  });
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  const caFile = `${upstreamHome.root}/upstream-ca.pem`;
  writeFileSync(caFile, upstream.caPem);
  writeHomePolicy(home, (defaults) => ({
    rules: [{ id: 'test.deny-denied', action: 'deny', domains: ['denied.example'] }, ...defaults.rules],
    credentials: {
      providers: [
        { id: 'acme', env: 'ACME_API_KEY', header: 'x-acme-key', hosts: ['api.acme.test'], ports: [443, 9443], standInPrefix: 'acme-' },
      ],
    },
  }));
  const tls = (host: string, port: number): string => `${host}:${port}=127.0.0.1:${upstream.port}`;
  const plainAt = (host: string): string => `${host}:80=127.0.0.1:${(plain.address() as AddressInfo).port}`;
  run = await runCapsemAsync(
    home.root,
    ['record', '--name', 'reflections', '--', process.execPath, FIXTURE],
    {
      ANTHROPIC_API_KEY: REAL.anthropic,
      GEMINI_API_KEY: REAL.gemini,
      ACME_API_KEY: REAL.acme,
      OPENAI_API_KEY: '',
      GOOGLE_API_KEY: '',
      CAPSEM_RESOLVE: [
        ...PROVIDER_HOSTS.map((h) => tls(h, 443)),
        tls('api.anthropic.com', 8443),
        tls('api.acme.test', 9443),
        plainAt('api.anthropic.com'),
        plainAt('generativelanguage.googleapis.com'),
      ].join(','),
      CAPSEM_UPSTREAM_CA_FILE: caFile,
    },
    { timeoutMs: 240_000 },
  );
  // Raw bytes first: nothing has opened session.db or main.db since capsem exited.
  rawLeaks = tracesInFiles(filesUnder(home.root), REAL);
  const line = run.stdout.split('\n').find((l) => l.startsWith('REPORT '));
  got = line ? JSON.parse(line.slice('REPORT '.length)) : {};
  sessionId = (JSON.parse(runCapsem(home.root, ['list', '--json']).stdout) as { id: string }[])[0]!.id;
  const echoed = (label: string): Record<string, string> => JSON.parse(got[label]?.body ?? '{}').headers ?? {};
  const acmeReflection = Buffer.from(got['acme encoded']?.body?.split('\n')[0] ?? '', 'base64').toString();
  standIn = {
    anthropic: echoed('echo')['x-api-key'] ?? '',
    gemini: '',
    acme: acmeReflection.startsWith('{') ? (JSON.parse(acmeReflection).headers['x-acme-key'] ?? '') : '',
  };
  standIn.gemini = new URL(String(got.redirect?.headers?.location ?? 'https://x/'), 'https://x').searchParams.get('key') ?? '';
}, 300_000);

afterAll(async () => {
  await upstream.close();
  plain.close();
  home.remove();
  upstreamHome.remove();
  rmSync(exportsDir, { recursive: true, force: true });
});

const rows = <T>(sql: string): T[] => sessionRows<T>(`${home.root}/run/sessions/${sessionId}/session.db`, sql);

describe('keys never come back (capsem record against a reflecting provider API)', () => {
  it("ran the program to its end, with stand-ins as long as the keys and in each provider's shape", () => {
    expect(run.stdout, run.stderr).toContain('REPORT ');
    expect(run.code, run.stderr).toBe(0);
    expect(standIn.anthropic).toMatch(/^sk-ant-api03-[A-Za-z0-9_-]{93}AA$/);
    expect(standIn.gemini).toMatch(/^AIza[A-Za-z0-9_-]{35}$/);
    expect(standIn.acme).toMatch(/^acme-[A-Za-z0-9_-]+$/);
    expect(standIn.acme).toHaveLength(REAL.acme.length);
  });

  it('released each real key to its provider over TLS, on the ports it belongs to', () => {
    const received = upstream.requests.map((r) => [
      r.headers.host,
      r.path.split('?')[0],
      keyIn({ headers: r.headers, url: r.path } as IncomingMessage),
    ]);
    expect(received).toContainEqual(['api.anthropic.com', '/echo', REAL.anthropic]);
    expect(received).toContainEqual(['generativelanguage.googleapis.com', '/redirect', REAL.gemini]);
    expect(received).toContainEqual(['api.acme.test', '/encoded', REAL.acme]);
    expect(received).toContainEqual(['api.acme.test:9443', '/encoded', REAL.acme]);
  });

  it('hands the program every reflection with the stand-in where the key was, and never a trace of the key', () => {
    expect(tracesIn(Buffer.from(run.stdout + run.stderr), REAL, "the program's output")).toEqual([]);
    const a = standIn.anthropic;
    const echo = got.echo!;
    expect([echo.status, echo.reason, echo.headers!['x-echo'], echo.headers![`x-${a.toLowerCase()}`]]).toEqual([200, `OK ${a}`, a, '1']);
    expect(echo.headers!['set-cookie']).toEqual([`k=${a}`, `u=${encodeURIComponent(a)}`]);
    expect(JSON.parse(echo.body!)).toMatchObject({ url: '/echo?via=fetch', headers: { 'x-api-key': a }, body: 'hello' });
    // Lengths are kept: the body is exactly as long as the upstream declared.
    expect(Number(got.length!.headers!['content-length'])).toBe(Buffer.byteLength(got.length!.body!));
    expect(got.redirect!.status).toBe(302);
    expect(got.redirect!.headers!.location).toBe(
      `https://generativelanguage.googleapis.com/next?key=${encodeURIComponent(standIn.gemini)}&again=${standIn.gemini}`,
    );
    for (const coding of ['gzip', 'br', 'deflate']) {
      // Compressed upstream, decoded to be scrubbed: the client gets it plain.
      expect(got[coding]!.headers!['content-encoding'], coding).toBeUndefined();
      expect(JSON.parse(got[coding]!.body!).headers['x-api-key'], coding).toBe(a);
    }
    const lines = got.encoded!.body!.split('\n');
    for (const line of lines.slice(0, 6)) expect(Buffer.from(line, 'base64').toString()).toContain(`"x-api-key":"${a}"`);
    expect(decodeURIComponent(lines[6]!)).toContain(`"x-api-key":"${a}"`);
    // The acme key has characters a URL escapes: its percent-encoded reflection still reads back to the stand-in.
    const acme = got['acme encoded']!.body!.split('\n');
    expect(decodeURIComponent(acme[6]!)).toContain(`"x-acme-key":"${standIn.acme}"`);
    expect(Buffer.from(acme[1]!, 'base64url').toString()).toContain(standIn.acme);
    expect(got['acme on its own port']!.status).toBe(200);
    // Sent 7 bytes at a time: the key was split across many chunks.
    expect(got.sse!.body).toMatch(new RegExp(`^event: echo\ndata: \\{.*"x-api-key":"${a}".*\\}\n\ndata: ${a}\n\n$`));
    expect(got.trailer!.body).toContain(`"x-api-key":"${a}"`);
    // Trailers are not relayed at all.
    expect(got.trailer!.body).not.toMatch(/x-key/i);
    // A coding the proxy cannot read is not passed on unread.
    expect(got['unknown response coding']).toMatchObject({
      status: 502,
      body: 'capsem: the upstream answered in content-encoding x-custom, which capsem cannot read to make sure it carries no provider key back; refused\n',
    });
  });

  it('scrubs HTTP/2 responses and WebSocket frames the same way', () => {
    const a = standIn.anthropic;
    expect(got['h2 echo']).toMatchObject({ status: 200 });
    expect(JSON.parse(got['h2 echo']!.body!).headers['x-api-key']).toBe(a);
    expect(got['h2 echo']!.headers!['x-echo']).toBe(a);
    expect(JSON.parse(got['h2 gzip']!.body!).headers['x-api-key']).toBe(a);
    expect(got['h2 sse']!.body).toContain(`data: ${a}\n\n`);
    const ws = got.websocket!;
    expect(ws.upgrade).toMatchObject({ reason: `Switching ${a}`, headers: { 'x-echo': a } });
    expect(ws.messages).toEqual([
      expect.stringContaining(`"x-api-key":"${a}"`),
      `text:part one ${a} part two`,
      `binary:${Buffer.from(a).toString('base64')}`,
    ]);
    expect(ws.pings).toEqual([a]);
    expect(ws.close).toBe(`1000 ${a}`);
    // An upgrade the server declines is an ordinary answer, scrubbed (and decoded) the same way.
    expect(got['websocket declined']).toMatchObject({ status: 401, reason: `Unauthorized ${a}`, headers: { 'x-echo': a } });
    expect(JSON.parse(got['websocket declined']!.body!).headers['x-api-key']).toBe(a);
  });

  it('refuses the stand-in over plain HTTP or to another port (403 naming the rule and how to allow it), and nothing gets there', () => {
    const plainHttp =
      /the anthropic key is released only over TLS \(https:\/\/api\.anthropic\.com\); refused and recorded \(rule credentials\.stand-in-elsewhere\)/;
    expect(got['absolute-form http']!.body).toMatch(plainHttp);
    expect(got['plain tunnel (fetch)']).toMatchObject({ status: 403, body: expect.stringMatching(plainHttp) });
    expect(got['plain tunnel (raw)']!.body).toMatch(/^HTTP\/1\.1 403 Forbidden[\s\S]*over plain HTTP/);
    expect(got['plain websocket']!.body).toMatch(/^HTTP\/1\.1 403 Forbidden[\s\S]*over plain HTTP/);
    expect(got['h2c plain tunnel']!.body).toMatch(plainHttp);
    expect(got['another port']).toMatchObject({
      status: 403,
      body: expect.stringContaining(
        `https://api.anthropic.com:8443, a port that is not one of anthropic's API ports (443); refused and recorded (rule credentials.stand-in-elsewhere). To release the key on that port, list it in the policy file: "credentials": {"ports": {"anthropic": [443, 8443]}}`,
      ),
    });
    expect(got['another port h2']!.body).toMatch(/api\.anthropic\.com:8443, a port that is not one of anthropic's API ports/);
    expect(got['stand-in in a plain body']).toMatchObject({
      status: 403,
      body: expect.stringMatching(/anthropic key \(in body\) to http:\/\/api\.anthropic\.com over plain HTTP/),
    });
    expect(got['gemini query over plain HTTP']).toMatchObject({ status: 403, body: expect.stringMatching(/gemini key \(in url\)/) });
    expect(plainHits).toEqual([]);
    expect(upstream.requests.filter((r) => String(r.headers.host).endsWith(':8443') || r.path === '/v1/messages')).toEqual([]);
  });

  it('refuses a stand-in hidden in a compressed body or far into one, and a body that cannot be checked, on its way elsewhere', () => {
    expect(got['gzip body elsewhere']).toMatchObject({
      status: 403,
      body: expect.stringMatching(/anthropic key \(in body\) to elsewhere\.example/),
    });
    expect(got['far into a body elsewhere']).toMatchObject({ status: 403, body: expect.stringMatching(/\(in body\)/) });
    expect(got['gzip bomb elsewhere']).toMatchObject({
      status: 403,
      body: expect.stringMatching(/decodes to more than 64 MiB, past what capsem checks, .*\(rule credentials\.unchecked-body\)/),
    });
    expect(got['unknown coding elsewhere']).toMatchObject({ status: 403, body: expect.stringMatching(/content-encoding compress/) });
    expect(upstream.requests.filter((r) => String(r.headers.host).startsWith('elsewhere.example'))).toEqual([]);
  });

  it('records each refusal as what it was: denied, its rule, http with its path and query apart, and a security row', () => {
    const refused = rows<{
      path: string;
      query: string | null;
      conn_type: string;
      port: number;
      status_code: number;
      matched_rule: string;
    }>("SELECT path, query, conn_type, port, status_code, matched_rule FROM net_events WHERE decision = 'denied' ORDER BY seq");
    const at = (path: string) => refused.filter((r) => r.path === path);
    expect(at('/v1/messages')[0]).toEqual({
      path: '/v1/messages',
      query: 'beta=true',
      conn_type: 'http',
      port: 80,
      status_code: 403,
      matched_rule: 'credentials.stand-in-elsewhere',
    });
    expect(at('/blocked')).toEqual([
      { path: '/blocked', query: 'q=1', conn_type: 'http', port: 80, status_code: 403, matched_rule: 'test.deny-denied' },
    ]);
    expect(at('/fronted')).toEqual([
      { path: '/fronted', query: 'q=2', conn_type: 'http', port: 80, status_code: 421, matched_rule: 'proxy.bad-request' },
    ]);
    expect(refused.filter((r) => r.port === 8443).map((r) => [r.conn_type, r.matched_rule])).toEqual([
      ['https', 'credentials.stand-in-elsewhere'],
      ['https', 'credentials.stand-in-elsewhere'],
    ]);
    expect(refused.filter((r) => r.matched_rule === 'credentials.unchecked-body')).toHaveLength(2);
    expect(rows("SELECT decision, status_code, error_kind FROM net_events WHERE path = '/unknown-coding'")).toEqual([
      { decision: 'allowed', status_code: 502, error_kind: 'upstream_unreadable' },
    ]);
    const security = rows<{ rule_action: string; event_json: string }>(
      "SELECT rule_action, event_json FROM security_rule_events WHERE event_type = 'credential.stand_in_elsewhere' ORDER BY id",
    ).map((r) => JSON.parse(r.event_json) as { provider: string; where: string; host: string; port: number });
    expect(security.filter((e) => e.host === 'api.anthropic.com').map((e) => [e.where, e.port])).toEqual(
      expect.arrayContaining([
        ['header:x-api-key', 80],
        ['header:x-api-key', 8443],
        ['body', 80],
      ]),
    );
    const substituted = rows<{ host: string }>("SELECT host FROM substitution_events WHERE outcome = 'substituted'");
    expect(new Set(substituted.map((s) => s.host))).toEqual(
      new Set(['api.anthropic.com', 'generativelanguage.googleapis.com', 'api.acme.test']),
    );
  });

  it('leaves no trace of a real key in any file under CAPSEM_HOME (read raw, WAL included), in any export, or in capsem api', async () => {
    expect(rawLeaks).toEqual([]);
    const files = [...filesUnder(home.root), ...exportAll(home.root, 'reflections', exportsDir)];
    expect(files.filter((f) => /session\.db(-wal)?$/.test(f)).length).toBeGreaterThan(0);
    expect(tracesInFiles(files, REAL)).toEqual([]);
    expect(tracesIn(Buffer.from(await sessionApiAnswers(home.root, sessionId)), REAL, 'the API')).toEqual([]);
    // The reflections were recorded, with the stand-in where the key was.
    const bodies = rows<{ body: Buffer }>("SELECT body FROM event_body_blobs WHERE direction = 'response'").map((r) =>
      r.body.toString('latin1'),
    );
    expect(bodies.some((b) => b.includes(`"x-api-key":"${standIn.anthropic}"`))).toBe(true);
  }, 180_000);
});
