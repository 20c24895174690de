import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { AppCore } from '../../electron/app/appCore.ts';
import { startBrowserServer, type BrowserServer } from '../../electron/app/browserServer.ts';
import { BROWSER_MAX_MESSAGE_BYTES } from '../../electron/contract/appContract.ts';
import { seedSessions } from '../../electron/dev/seedSessions.ts';
import { tempHome } from '../helpers/tempHome.ts';

// Browser mode over real sockets: the renderer served with its security headers, and the
// WebSocket refused without the token, from another origin or under a foreign Host name.

const home = tempHome();
const rendererDir = mkdtempSync(join(tmpdir(), 'capsem-renderer-'));
let core: AppCore;
let server: BrowserServer;
let unbuilt: BrowserServer;

function get(port: number, path: string, host = `127.0.0.1:${port}`): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
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
  server = await startBrowserServer({ core, rendererDir, port: 0, modeReason: 'no Electron runtime' });
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
    const status = await new Promise<number>((resolve) => ws.on('unexpected-response', (req, res) => {
      resolve(res.statusCode ?? 0);
      req.destroy();
    }));
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
