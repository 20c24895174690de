import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AppCore } from '../../electron/app/appCore.ts';
import { startBrowserServer, type BrowserServer } from '../../electron/app/browserServer.ts';
import type { CallResult } from '../../electron/contract/appContract.ts';
import { BROWSER_IMPORT_MAX_BYTES, BROWSER_MAX_MESSAGE_BYTES } from '../../electron/contract/browserMode.ts';
import { openMainDb } from '../../electron/store/mainDb.ts';
import { seedSessions } from '../../electron/dev/seedSessions.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Browser mode over real sockets: the renderer served with its security headers, the WebSocket
// refused without the token, from another origin or under a foreign Host name, and POST /import
// under the same guards (streamed to a staging file that never outlives the request).

const home = tempHome();
const rendererDir = mkdtempSync(join(tmpdir(), 'capsem-renderer-'));
let core: AppCore;
let server: BrowserServer;
let unbuilt: BrowserServer;

function get(
  port: number,
  path: string,
  host = `127.0.0.1:${port}`,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function socket(query: string, headers: Record<string, string> = {}): WebSocket {
  return new WebSocket(`ws://127.0.0.1:${server.port}/ws${query}`, { headers: { origin: `http://127.0.0.1:${server.port}`, ...headers } });
}

function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
}

function nextMessage(ws: WebSocket): Promise<Record<string, unknown>> {
  return new Promise((resolve) => ws.once('message', (data) => resolve(JSON.parse(data.toString()) as Record<string, unknown>)));
}

beforeAll(async () => {
  await seedSessions(home, { sessions: 2, events: 60, seed: 3 });
  writeFileSync(join(rendererDir, 'index.html'), '<!doctype html><title>Capsem</title><script type="module" src="./app.js"></script>');
  writeFileSync(join(rendererDir, 'app.js'), 'console.log("hi")');
  core = new AppCore({ home });
  server = await startBrowserServer({ core, rendererDir, port: 0, modeReason: 'no Electron runtime', home });
  unbuilt = await startBrowserServer({ core, rendererDir: join(rendererDir, 'missing'), port: 0 });
}, 60_000);

afterAll(async () => {
  await server.close();
  await unbuilt.close();
  core.close();
  home.remove();
});

describe('the page', () => {
  it('serves the built renderer with a strict CSP and no referrer', async () => {
    expect(server.url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${server.port}/\\?token=[A-Za-z0-9_-]{43}$`));
    const page = await get(server.port, '/?token=abc');
    expect(page.status).toBe(200);
    expect(page.body).toContain('<title>Capsem</title>');
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).toContain(`ws://127.0.0.1:${server.port}`);
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect((await get(server.port, '/app.js')).headers['content-type']).toMatch(/^text\/javascript/);
    expect(JSON.parse((await get(server.port, '/mode.json')).body)).toEqual({ kind: 'browser', reason: 'no Electron runtime' });
  });

  it('refuses a foreign Host name and paths outside the renderer', async () => {
    expect((await get(server.port, '/', `evil.example:${server.port}`)).status).toBe(403);
    expect((await get(server.port, '/../package.json')).status).toBe(404);
    expect((await get(server.port, '/%2e%2e/%2e%2e/etc/passwd')).status).toBe(404);
    expect((await get(server.port, '/', `localhost:${server.port}`)).status).toBe(200);
  });

  it('says how to build the renderer when it is not built', async () => {
    const page = await get(unbuilt.port, '/');
    expect(page.status).toBe(503);
    expect(page.body).toContain('the renderer is not built: run <code>npm run build:renderer</code>');
  });
});

const asRoot = process.getuid?.() === 0;
describe.skipIf(asRoot)(
  `a renderer file this process cannot read${asRoot ? ' (skipped: running as root, which reads a mode-000 file)' : ''}`,
  () => {
    it('is a 404 like a missing file, and the server goes on serving', async () => {
      const locked = join(rendererDir, 'locked.js');
      writeFileSync(locked, 'console.log("locked")');
      chmodSync(locked, 0);
      expect((await get(server.port, '/locked.js')).status).toBe(404);
      expect((await get(server.port, '/app.js')).status).toBe(200);
    });
  },
);

describe('the socket', () => {
  it('refuses a connection without the token, with a reason', async () => {
    expect(await closed(socket(''))).toMatchObject({ code: 1008, reason: expect.stringMatching(/token/) });
    expect(await closed(socket('?token=wrong'))).toMatchObject({ code: 1008, reason: expect.stringMatching(/token/) });
  });

  it('refuses another origin', async () => {
    const ws = socket(`?token=${server.token}`, { origin: 'http://evil.example' });
    expect(await closed(ws)).toMatchObject({ code: 1008, reason: expect.stringMatching(/origin/) });
    const none = new WebSocket(`ws://127.0.0.1:${server.port}/ws?token=${server.token}`);
    expect(await closed(none)).toMatchObject({ code: 1008, reason: expect.stringMatching(/origin/) });
  });

  it('refuses a foreign Host without a handshake (DNS rebinding)', async () => {
    const ws = socket(`?token=${server.token}`, { host: `evil.example:${server.port}`, origin: `http://evil.example:${server.port}` });
    ws.on('error', () => {});
    const status = await new Promise<number>((resolve) =>
      ws.on('unexpected-response', (req, res) => {
        resolve(res.statusCode ?? 0);
        req.destroy();
      }),
    );
    expect(status).toBe(403);
  });

  it('carries calls and answers with the token, errors with their codes', async () => {
    const ws = socket(`?token=${server.token}`);
    await new Promise((resolve) => ws.on('open', resolve));
    ws.send(JSON.stringify({ id: 1, call: 'sessions.list', params: {} }));
    const list = await nextMessage(ws);
    expect(list.id).toBe(1);
    expect(list.result).toHaveLength(2);
    ws.send(JSON.stringify({ id: 2, call: 'sessions.nope', params: {} }));
    expect(await nextMessage(ws)).toMatchObject({ id: 2, error: { code: 'bad_call' } });
    ws.send(JSON.stringify({ id: 3, call: 'sessions.info', params: { id: 'co-work1' } }));
    expect(await nextMessage(ws)).toMatchObject({ id: 3, error: { code: 'bad_params' } });
    ws.send(JSON.stringify({ id: 4, call: 'sessions.list', params: {}, extra: true }));
    expect(await nextMessage(ws)).toMatchObject({ id: 4, error: { code: 'bad_request' } });
    ws.send('not json');
    expect(await closed(ws)).toMatchObject({ code: 1007 });
  });

  it('closes a connection that sends more than the message cap', async () => {
    const ws = socket(`?token=${server.token}`);
    await new Promise((resolve) => ws.on('open', resolve));
    ws.send(JSON.stringify({ id: 1, call: 'terminal.input', params: { data: 'x'.repeat(BROWSER_MAX_MESSAGE_BYTES) } }));
    expect((await closed(ws)).code).toBe(1009);
  });
});

interface Posted {
  status: number;
  body: Record<string, unknown>;
}

/** POST /import as a page would (its Origin and Host), the body sent whole or not at all. */
function post(path: string, body: Buffer | null, headers: Record<string, string> = {}, port = server.port): Promise<Posted> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: {
          host: `127.0.0.1:${port}`,
          origin: `http://127.0.0.1:${port}`,
          'content-type': 'application/octet-stream',
          ...(body ? { 'content-length': String(body.length) } : {}),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, body: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : { text } });
        });
      },
    );
    req.on('error', reject);
    if (body) req.end(body);
    // A declared length and no body: the answer must come before any of it is read.
    else if (headers['content-length'] !== undefined) req.flushHeaders();
    else req.end();
  });
}

function footprint(): { sessions: number; staging: boolean } {
  const db = openMainDb(home);
  const sessions = (db.prepare('SELECT count(*) AS n FROM sessions').get() as { n: number }).n;
  db.close();
  return { sessions, staging: existsSync(join(home.runDir, 'staging')) };
}

describe('POST /import', () => {
  let archive: Buffer;
  beforeAll(async () => {
    const [first] = (await core.handle('sessions.list', {})) as CallResult<'sessions.list'>;
    const { path } = (await core.handle('sessions.export', { id: first!.id, format: 'archive' })) as CallResult<'sessions.export'>;
    archive = readFileSync(path);
  });

  it('is guarded like the socket: token, Origin, Host, POST only', async () => {
    const before = footprint();
    expect(await post('/import?name=a.capsem', archive)).toMatchObject({
      status: 401,
      body: { code: 'bad_token', message: expect.stringMatching(/token/) },
    });
    expect((await post(`/import?token=wrong`, archive)).status).toBe(401);
    expect(await post(`/import?token=${server.token}`, archive, { origin: 'http://evil.example' })).toMatchObject({
      status: 403,
      body: { code: 'forbidden' },
    });
    const noOrigin = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: server.port,
          path: `/import?token=${server.token}`,
          method: 'POST',
          headers: { 'content-length': String(archive.length) },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(archive);
    });
    expect(noOrigin).toBe(403);
    expect(
      (
        await post(`/import?token=${server.token}`, archive, {
          host: `evil.example:${server.port}`,
          origin: `http://evil.example:${server.port}`,
        })
      ).status,
    ).toBe(403);
    expect((await get(server.port, `/import?token=${server.token}`)).status).toBe(405);
    expect(footprint()).toEqual(before);
    // A server without CAPSEM_HOME to stage in does not import.
    expect(await post(`/import?token=${unbuilt.token}`, archive, {}, unbuilt.port)).toMatchObject({
      status: 404,
      body: { code: 'not_available' },
    });
  });

  it('imports an uploaded archive with the token and answers its new id and name', async () => {
    const before = footprint();
    const answer = await post(`/import?token=${server.token}&name=${encodeURIComponent('my export.capsem')}`, archive);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), name: expect.any(String) });
    const info = (await core.handle('sessions.info', { id: answer.body.id })) as CallResult<'sessions.info'>;
    expect(info).toMatchObject({ status: 'stopped', mode: 'imported', onDisk: true, statusReason: 'imported from my_export.capsem' });
    expect(footprint()).toEqual({ sessions: before.sessions + 1, staging: false });
  });

  it('refuses a corrupt file with bad_archive (naming the file, not the staging path) and writes nothing', async () => {
    const before = footprint();
    const broken = Buffer.from(archive);
    broken[archive.length >> 1] = broken[archive.length >> 1]! ^ 0xff;
    for (const [name, body] of [
      ['broken.capsem', broken],
      ['../../notes.txt', Buffer.from('hello\n')],
      ['empty', Buffer.alloc(0)],
    ] as const) {
      const answer = await post(`/import?token=${server.token}&name=${encodeURIComponent(name)}`, body);
      expect(answer, name).toMatchObject({ status: 400, body: { code: 'bad_archive', message: expect.any(String) } });
      expect(String(answer.body.message), name).not.toContain(home.runDir);
      expect(footprint(), name).toEqual(before);
    }
  });

  it('refuses an upload over the cap or without a length before reading it, and cleans up one cut short', async () => {
    const before = footprint();
    expect(await post(`/import?token=${server.token}`, null, { 'content-length': String(BROWSER_IMPORT_MAX_BYTES + 1) })).toMatchObject({
      status: 413,
      body: { code: 'too_large' },
    });
    expect(await post(`/import?token=${server.token}`, null, { 'transfer-encoding': 'chunked' })).toMatchObject({
      status: 411,
      body: { code: 'length_required' },
    });
    // A length promised and the connection dropped part way: the staged part is removed.
    await new Promise<void>((resolve) => {
      const req = request({
        host: '127.0.0.1',
        port: server.port,
        path: `/import?token=${server.token}`,
        method: 'POST',
        headers: { origin: `http://127.0.0.1:${server.port}`, 'content-length': String(archive.length) },
      });
      req.on('error', () => resolve());
      req.write(archive.subarray(0, 1000), () =>
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 100),
      );
    });
    await expect.poll(() => footprint(), { timeout: 5000 }).toEqual(before);
  });
});
