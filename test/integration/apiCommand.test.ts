import { spawn, type ChildProcess } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, expect, it } from 'vitest';
import { call } from '../helpers/apiClient.ts';
import { runCapsem, USER_FOLDER } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';

const home = tempHome();
const BIN = fileURLToPath(new URL('../../bin/capsem.mjs', import.meta.url));
const started = new Set<ChildProcess>();
// A test that fails part way must not leave its server running.
afterEach(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  started.clear();
});
afterAll(() => home.remove());

/** `capsem api --port 0` as a user runs it, once it says where it listens. */
async function startApi(): Promise<{ child: ChildProcess; url: string; port: number }> {
  const child = spawn(process.execPath, [BIN, 'api', '--port', '0'], {
    cwd: USER_FOLDER,
    env: { ...process.env, CAPSEM_HOME: home.root },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.on('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  expect(line).toMatch(/^Capsem API: http:\/\/127\.0\.0\.1:\d+$/);
  const url = line.slice('Capsem API: '.length);
  return { child, url, port: Number(new URL(url).port) };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  child.kill('SIGTERM');
  return exited;
}

it('capsem api prints its address once it listens, serves the store, and stops on SIGTERM', async () => {
  runCapsem(home.root, ['dev', 'seed', '--sessions', '1', '--events', '30']);
  const { child, url } = await startApi();
  const { sessions } = (await call(url, '/v1/sessions')).json<{ sessions: { name: string }[] }>();
  expect(sessions.map((s) => s.name)).toEqual(['co-work1']);
  expect(await stop(child)).toBe(0);
});

/** Sends raw bytes and returns the status and JSON body the server answered before it closed (or went quiet for 5 s). */
function exchange(port: number, raw: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(raw));
    socket.setTimeout(5000, () => socket.destroy());
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1] ?? 0);
      const text = answer.slice(answer.indexOf('\r\n\r\n') + 4);
      try {
        resolve({ status, body: JSON.parse(text) });
      } catch {
        resolve({ status, body: `not JSON: ${JSON.stringify(answer.slice(0, 200))}` });
      }
    });
  });
}

it('answers hostile requests with a 4xx JSON error each, and goes on serving', async () => {
  const { child, port } = await startApi();
  const host = `Host: 127.0.0.1:${port}\r\n`;
  const cases: [string, string, number][] = [
    ['a target that is not a path', `GET http://a:99999/ HTTP/1.1\r\n${host}Connection: close\r\n\r\n`, 400],
    ['a path with broken percent-encoding', `GET /v1/sessions/%E0%A4%A HTTP/1.1\r\n${host}Connection: close\r\n\r\n`, 400],
    ['a query string over the header limit', `GET /v1/sessions?${'q=x&'.repeat(5000)} HTTP/1.1\r\n${host}Connection: close\r\n\r\n`, 431],
    [
      'a WebSocket upgrade',
      `GET /v1/events HTTP/1.1\r\n${host}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
      400,
    ],
    ['a CONNECT', `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`, 405],
    ['no Host header', `GET /v1/sessions HTTP/1.1\r\nConnection: close\r\n\r\n`, 400],
    ['a request line that is not HTTP', `\x01\x02 nonsense\r\n\r\n`, 400],
  ];
  for (const [what, raw, status] of cases) {
    const answer = await exchange(port, raw);
    expect(answer, what).toEqual({ status, body: { error: expect.any(String) } });
    expect(child.exitCode, what).toBeNull();
  }
  const within = await call(`http://127.0.0.1:${port}`, `/v1/sessions?${'q=x&'.repeat(3000)}`);
  expect(within.status).toBe(200);
  expect((await call(`http://127.0.0.1:${port}`, '/healthz')).body).toBe('ok\n');
  expect(await stop(child)).toBe(0);
});

it('says plainly when the port is taken', async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const port = (blocker.address() as { port: number }).port;
  const result = runCapsem(home.root, ['api', '--port', String(port)]);
  blocker.close();
  expect(result.code).toBe(1);
  expect(result.stderr.trim()).toBe(`capsem: port ${port} is already in use; pick another with --port`);
});
