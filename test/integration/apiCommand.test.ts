import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, expect, it } from 'vitest';
import { call } from '../helpers/apiClient.ts';
import { runCapsem, USER_FOLDER } from '../helpers/runCapsem.ts';
import { tempHome } from '../helpers/tempHome.ts';
import { ensureTestUser, httpGetAs, type TestUser } from '../helpers/unprivilegedUser.ts';

const home = tempHome();
const BIN = fileURLToPath(new URL('../../bin/capsem.mjs', import.meta.url));
const started = new Set<ChildProcess>();
// A test that fails part way must not leave its server running.
afterEach(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  started.clear();
});
afterAll(() => home.remove());

/** `capsem api --port 0` as a user runs it, once it says where it listens; `stderr` gathers what it says there. */
async function startApi(extra: readonly string[] = []): Promise<{ child: ChildProcess; url: string; port: number; stderr: () => string }> {
  const child = spawn(process.execPath, [BIN, 'api', '--port', '0', ...extra], {
    cwd: USER_FOLDER,
    env: { ...process.env, CAPSEM_HOME: home.root },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.add(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
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
  return { child, url, port: Number(new URL(url).port), stderr: () => stderr };
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

const testUser = ensureTestUser({ userNamespace: false });
const otherAccount = typeof testUser === 'string' ? it.skip : it;
if (typeof testUser === 'string') console.warn(`skipping the other-account API tests: ${testUser}`);

otherAccount("serves only the user who owns CAPSEM_HOME: another local account's request is refused with 403 and counted", async () => {
  const user = testUser as TestUser;
  const { child, url, stderr } = await startApi();
  expect((await call(url, '/v1/sessions')).status).toBe(200);

  const other = await httpGetAs(user, `${url}/v1/sessions`);
  expect(other.status, JSON.stringify(other)).toBe(403);
  expect(JSON.parse(other.body!)).toEqual({
    error: `refused: this server answers only the user who owns CAPSEM_HOME (uid 0); this connection is from uid ${user.uid}`,
  });
  expect(other.body).not.toContain('co-work1');
  // Every route, the live tail included, is behind the same check.
  expect((await httpGetAs(user, `${url}/v1/events`)).status).toBe(403);

  const status = (await call(url, '/v1/status')).json<{ connections: { refused: number } }>();
  expect(status.connections.refused).toBe(2);
  expect(stderr()).toContain(
    `capsem api: refused: this server answers only the user who owns CAPSEM_HOME (uid 0); this connection is from uid ${user.uid}\n`,
  );
  expect(
    stderr()
      .split('\n')
      .filter((l) => l.includes('refused')).length,
  ).toBe(1);
  expect(await stop(child)).toBe(0);
});

otherAccount(
  "follows CAPSEM_HOME's owner at each connection: handed to another account, the home is served to it and no longer to root",
  async () => {
    const user = testUser as TestUser;
    const { child, url } = await startApi();
    // Closed after it, so the next request from root opens a connection of its own: the check is made as each is accepted.
    expect((await call(url, '/healthz', { headers: { connection: 'close' } })).status).toBe(200);
    chownSync(home.root, user.uid, user.gid);
    try {
      const theirs = await httpGetAs(user, `${url}/v1/sessions`);
      expect(theirs.status, JSON.stringify(theirs)).toBe(200);
      expect(JSON.parse(theirs.body!)).toHaveProperty('sessions');
      const root = await call(url, '/v1/sessions');
      expect(root.status).toBe(403);
      expect(root.json()).toEqual({
        error: `refused: this server answers only the user who owns CAPSEM_HOME (uid ${user.uid}); this connection is from uid 0`,
      });
    } finally {
      chownSync(home.root, 0, 0);
    }
    expect((await call(url, '/healthz')).status).toBe(200);
    expect(await stop(child)).toBe(0);
  },
);

otherAccount('serves every local account with --any-local-user, as the user asked', async () => {
  const user = testUser as TestUser;
  const { child, url } = await startApi(['--any-local-user']);
  const theirs = await httpGetAs(user, `${url}/v1/sessions`);
  expect(theirs.status, JSON.stringify(theirs)).toBe(200);
  expect((await call(url, '/v1/status')).json<{ connections: { refused: number } }>().connections.refused).toBe(0);
  expect(await stop(child)).toBe(0);
});
